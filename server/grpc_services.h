// The gRPC face of the coordinator: ClientServiceImpl and AgentServiceImpl
// only authorize, convert between proto and the Coordinator's (and its read
// side's) calls and answer; the logic lives in server/coordinator/.
//
// ClientService uses gRPC's synchronous API: a watch stream holds a server
// thread, which is fine for a few watchers. AgentService uses the callback
// API, so an agent's stream holds no thread: at 1,000 nodes a thread (or
// two) per stream cost most of a core in wake-ups alone. An agent's
// messages are handed to the coordinator one at a time, in order, on gRPC's
// callback threads; the coordinator's messages for the node are queued and
// written one at a time as each write completes. No lock is held across a
// gRPC call that could call back.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_GRPC_SERVICES_H_
#define HPCAI500_SERVER_GRPC_SERVICES_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"

namespace hpcai500 {

// The largest message a client or an agent may send (a batch of events).
inline constexpr int kMaxReceiveMessageBytes = 8 * 1024 * 1024;

// The one mapping from absl::Status to grpc::Status (same code, same text).
grpc::Status ToGrpcStatus(const absl::Status& status);

// Every handler acts for the principal AuthInterceptor vouched for, and
// only as far as its role allows (server/auth/auth.h); mutating calls and
// refusals are audited.
class ClientServiceImpl final : public v1::ClientService::Service {
 public:
  // `coordinator` (what changes), `reads` (what is read: runs, nodes, the
  // leaderboard; server/coordinator/run_reads.h) and `access` are borrowed
  // and must outlive the service.
  ClientServiceImpl(Coordinator* coordinator, CoordinatorView* reads,
                    AccessControl* access)
      : coordinator_(coordinator), reads_(reads), access_(access) {}

  grpc::Status Submit(grpc::ServerContext* context,
                      const v1::SubmitRequest* request,
                      v1::SubmitResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* context,
                      const v1::GetRunRequest* request,
                      v1::Run* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context,
                        const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override;
  grpc::Status WatchRun(grpc::ServerContext* context,
                        const v1::WatchRunRequest* request,
                        grpc::ServerWriter<v1::RunUpdate>* writer) override;
  grpc::Status CancelRun(grpc::ServerContext* context,
                         const v1::CancelRunRequest* request,
                         v1::CancelRunResponse* response) override;
  grpc::Status Leaderboard(grpc::ServerContext* context,
                           const v1::LeaderboardRequest* request,
                           v1::LeaderboardResponse* response) override;
  grpc::Status ListNodes(grpc::ServerContext* context,
                         const v1::ListNodesRequest* request,
                         v1::ListNodesResponse* response) override;
  grpc::Status InvalidateRun(grpc::ServerContext* context,
                             const v1::InvalidateRunRequest* request,
                             v1::Run* response) override;
  grpc::Status ListAudit(grpc::ServerContext* context,
                         const v1::ListAuditRequest* request,
                         v1::ListAuditResponse* response) override;
  grpc::Status HoldRun(grpc::ServerContext* context,
                       const v1::HoldRunRequest* request,
                       v1::Run* response) override;
  grpc::Status ReleaseRun(grpc::ServerContext* context,
                          const v1::ReleaseRunRequest* request,
                          v1::Run* response) override;
  grpc::Status DrainNode(grpc::ServerContext* context,
                         const v1::DrainNodeRequest* request,
                         v1::Node* response) override;
  grpc::Status ResumeNode(grpc::ServerContext* context,
                          const v1::ResumeNodeRequest* request,
                          v1::Node* response) override;
  grpc::Status ListQueues(grpc::ServerContext* context,
                          const v1::ListQueuesRequest* request,
                          v1::ListQueuesResponse* response) override;
  grpc::Status PromoteBaseline(grpc::ServerContext* context,
                               const v1::PromoteBaselineRequest* request,
                               v1::Baseline* response) override;
  grpc::Status GetBaseline(grpc::ServerContext* context,
                           const v1::GetBaselineRequest* request,
                           v1::Baseline* response) override;

 private:
  Coordinator* const coordinator_;
  CoordinatorView* const reads_;
  AccessControl* const access_;
};

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

// The authentication hook of the interceptor chain: it finds the caller from
// the metadata `authorization: Bearer <token>` (AccessControl::Authenticate)
// and hands it to the handler; a call without a valid token while auth is on
// is audited and cancelled UNAUTHENTICATED before its handler does any work.
// It creates no interceptor for AgentService.Connect, whose long-lived
// stream authenticates itself once instead of passing every read and write
// through the chain.
class AuthInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // `access` is borrowed and must outlive the server.
  explicit AuthInterceptorFactory(AccessControl* access) : access_(access) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  AccessControl* const access_;
};

// hpcai500d's gRPC server on `address` (HOST:PORT, port 0: any) with
// `credentials`: `client`, and `agents` unless null, behind the auth
// interceptor, with the message cap and the coordinator's keepalive
// (common/keepalive.h). *port gets the port bound. Null when it cannot
// listen there. The arguments are borrowed for the server's life.
std::unique_ptr<grpc::Server> StartCoordinatorServer(
    const std::string& address,
    std::shared_ptr<grpc::ServerCredentials> credentials,
    ClientServiceImpl* client, AgentServiceImpl* agents, AccessControl* access,
    int* port);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_GRPC_SERVICES_H_
