// AgentService on gRPC's callback API: an agent's stream holds no thread
// (at 1,000 nodes a thread or two per stream cost most of a core in
// wake-ups alone). An agent's messages are handed to the coordinator one at
// a time, in order, on gRPC's callback threads; the coordinator's messages
// for the node are queued and written one at a time as each write
// completes. No lock is held across a gRPC call that could call back.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_AGENT_SERVICE_H_
#define HPCAI500_SERVER_AGENT_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"

namespace hpcai500 {

// The agent streams alive: their owner waits for the last one's end before
// what they borrow goes away (gRPC may run a stream's OnDone after
// Server::Shutdown returned).
//
// Thread-safe.
class LiveStreams {
 public:
  void Add();     // a stream began (its constructor)
  void Remove();  // a stream ended (the last thing its OnDone does)
  // Blocks until every stream that began has ended.
  void WaitForNone();

 private:
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// An agent stream is authenticated once, when it opens (the interceptor
// leaves it alone), checked as the other calls are, and counted against
// AccessLimits::max_agent_streams.
class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `coordinator` and `access` are borrowed and must outlive the service.
  // With `check_agent_certificates` (hpcai500d --tls-client-ca), Connect
  // refuses an agent whose client certificate does not name the node it
  // registers as (CheckAgentCertificate in server/auth/tls.h).
  AgentServiceImpl(Coordinator* coordinator, AccessControl* access,
                   bool check_agent_certificates = false)
      : coordinator_(coordinator),
        access_(access),
        check_agent_certificates_(check_agent_certificates) {}

  // Waits for every stream to end (WaitForStreams).
  ~AgentServiceImpl() override;

  grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  // Blocks until every agent stream has ended: call after the server's
  // Shutdown() and before destroying the coordinator or the access control
  // the streams borrow.
  void WaitForStreams();

 private:
  Coordinator* const coordinator_;
  AccessControl* const access_;
  const bool check_agent_certificates_;
  LiveStreams live_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AGENT_SERVICE_H_
