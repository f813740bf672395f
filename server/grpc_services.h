// The gRPC face of the coordinator: ClientServiceImpl and AgentServiceImpl
// only authorize, convert between proto and the Coordinator's (and its read
// side's) calls and answer; the logic lives in server/coordinator/.
//
// ClientService uses gRPC's synchronous API: a watch stream holds a server
// thread, which is fine for a few watchers. AgentService
// (server/agent_service.h) uses the callback API; what every call shares
// is in server/grpc_calls.h.
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
#include "common/keepalive.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/agent_service.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"
#include "server/grpc_calls.h"

namespace hpcai500 {

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
  grpc::Status Preflight(grpc::ServerContext* context,
                         const v1::PreflightRequest* request,
                         v1::PreflightResponse* response) override;
  grpc::Status NodeHealth(grpc::ServerContext* context,
                          const v1::NodeHealthRequest* request,
                          v1::NodeHealthResponse* response) override;
  grpc::Status SetMaintenance(grpc::ServerContext* context,
                              const v1::SetMaintenanceRequest* request,
                              v1::MaintenanceWindow* response) override;
  grpc::Status ListQueues(grpc::ServerContext* context,
                          const v1::ListQueuesRequest* request,
                          v1::ListQueuesResponse* response) override;
  grpc::Status PromoteBaseline(grpc::ServerContext* context,
                               const v1::PromoteBaselineRequest* request,
                               v1::Baseline* response) override;
  grpc::Status GetBaseline(grpc::ServerContext* context,
                           const v1::GetBaselineRequest* request,
                           v1::Baseline* response) override;
  grpc::Status ListChanges(grpc::ServerContext* context,
                           const v1::ListChangesRequest* request,
                           v1::ListChangesResponse* response) override;

 private:
  Coordinator* const coordinator_;
  CoordinatorView* const reads_;
  AccessControl* const access_;
};

// hpcai500d's gRPC server on `address` (HOST:PORT, port 0: any) with
// `credentials`: `client`, and `agents` and `more` (another service, e.g.
// BundleService) unless null, behind the auth interceptor and the one that
// names a request that is no valid message (INVALID_ARGUMENT rather than
// gRPC's INTERNAL without a word), with the message cap and the
// coordinator's keepalive (common/keepalive.h), closing connections idle (no
// call open) for `idle_timeout_s`. *port gets the port bound. Null when it
// cannot listen there. The arguments are borrowed for the server's life.
std::unique_ptr<grpc::Server> StartCoordinatorServer(
    const std::string& address,
    std::shared_ptr<grpc::ServerCredentials> credentials,
    ClientServiceImpl* client, AgentServiceImpl* agents, AccessControl* access,
    int* port, int idle_timeout_s = kDefaultGrpcIdleTimeoutS,
    grpc::Service* more = nullptr);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_GRPC_SERVICES_H_
