#include "server/grpc_services.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/keepalive.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

// How long a watch waits for news before it looks whether its caller left.
constexpr absl::Duration kPollInterval = absl::Milliseconds(200);

// Answers with `result`: into *response, or its error.
template <typename T>
grpc::Status Answer(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

// A call that only reads: authorizes `action` on `target`, then answers with
// what `read()` returns.
template <typename T, typename Read>
grpc::Status AuthorizedAnswer(AccessControl& access,
                              const grpc::ServerContext& context, Action action,
                              absl::string_view target, Read read,
                              T* response) {
  Principal who;
  grpc::Status allowed = Authorize(access, context, action, target, &who);
  if (!allowed.ok()) return allowed;
  return Answer<T>(read(), response);
}

// Audits what a mutating call did (`detail` when it succeeded, else its
// error) and answers with its result.
template <typename T>
grpc::Status AuditedAnswer(AccessControl& access, const Principal& who,
                           const grpc::ServerContext& context,
                           absl::string_view verb, absl::string_view target,
                           absl::StatusOr<T> result, absl::string_view detail,
                           T* response) {
  access.Audit(&who, verb, target, context.peer(), result.ok(),
               result.ok() ? detail : result.status().message());
  return Answer<T>(std::move(result), response);
}

// A mutating call: authorizes `action` on `target`, does `change(who)` and
// answers audited (`verb`, `detail`: AuditedAnswer).
template <typename T, typename Change>
grpc::Status AuthorizedChange(AccessControl& access,
                              const grpc::ServerContext& context, Action action,
                              absl::string_view verb, const std::string& target,
                              Change change, absl::string_view detail,
                              T* response) {
  Principal who;
  grpc::Status allowed = Authorize(access, context, action, target, &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer<T>(access, who, context, verb, target, change(who),
                          detail, response);
}

// Checks that the caller may change run `run_id` (`verb`: cancel, hold,
// release, promote): an operator its own runs, an admin any. A refusal is
// audited and returned; `who` is the caller.
grpc::Status AuthorizeRunChange(AccessControl& access, CoordinatorView& reads,
                                const grpc::ServerContext& context,
                                const std::string& verb, int64_t run_id,
                                Principal* who) {
  const std::string target = absl::StrCat("run ", run_id);
  grpc::Status allowed =
      Authorize(access, context, Action::kChangeOwnRun, target, who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::Run> run = reads.GetRun(run_id);
  if (!run.ok()) return ToGrpcStatus(run.status());
  if (!Allows(who->role, Action::kChangeAnyRun) && run->user() != who->user) {
    const std::string why = absl::StrCat(
        "it belongs to ", run->user().empty() ? "nobody" : run->user(),
        "; an operator may ", verb, " only its own runs");
    access.Audit(who, verb, target, context.peer(), /*allowed=*/false, why);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(target, ": ", why));
  }
  return grpc::Status::OK;
}

// A change of run `run_id` by its owner or an admin (AuthorizeRunChange),
// answered audited.
template <typename T, typename Change>
grpc::Status RunChange(AccessControl& access, CoordinatorView& reads,
                       const grpc::ServerContext& context,
                       const std::string& verb, int64_t run_id, Change change,
                       absl::string_view detail, T* response) {
  Principal who;
  grpc::Status allowed =
      AuthorizeRunChange(access, reads, context, verb, run_id, &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer<T>(access, who, context, verb,
                          absl::StrCat("run ", run_id), change(who), detail,
                          response);
}

}  // namespace

grpc::Status ClientServiceImpl::Submit(grpc::ServerContext* context,
                                       const v1::SubmitRequest* request,
                                       v1::SubmitResponse* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kSubmit, "submit", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::SubmitResponse> submitted = coordinator_->Submit(
      request->spec_yaml(), who.user,
      access_->limits().max_queued_runs_per_user, request->request_id());
  access_->Audit(
      &who, "submit",
      submitted.ok()
          ? absl::StrCat("submission ", submitted->submission_id(), " (runs ",
                         absl::StrJoin(submitted->run_ids(), ", "), ")",
                         submitted->replayed() ? " replayed" : "")
          : std::string("a spec"),
      context->peer(), submitted.ok(),
      submitted.ok() ? "" : submitted.status().message());
  return Answer(std::move(submitted), response);
}

grpc::Status ClientServiceImpl::GetRun(grpc::ServerContext* context,
                                       const v1::GetRunRequest* request,
                                       v1::Run* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "read a run",
      [&] { return reads_->GetRun(request->run_id()); }, response);
}

grpc::Status ClientServiceImpl::ListRuns(grpc::ServerContext* context,
                                         const v1::ListRunsRequest* request,
                                         v1::ListRunsResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "list runs",
      [&] { return reads_->ListRuns(*request); }, response);
}

grpc::Status ClientServiceImpl::WatchRun(
    grpc::ServerContext* context, const v1::WatchRunRequest* request,
    grpc::ServerWriter<v1::RunUpdate>* writer) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kRead, "watch a run", &who);
  if (!allowed.ok()) return allowed;
  if (absl::Status open = access_->OpenWatchStream(); !open.ok()) {
    return ToGrpcStatus(open);
  }
  grpc::Status status = grpc::Status::OK;
  Coordinator::WatchCursor cursor;
  while (!context->IsCancelled()) {
    absl::StatusOr<std::optional<v1::RunUpdate>> update =
        coordinator_->NextRunUpdate(request->run_id(), &cursor, kPollInterval);
    if (!update.ok()) {
      status = ToGrpcStatus(update.status());
      break;
    }
    if (!update->has_value()) continue;
    if (!writer->Write(**update)) break;  // the watcher went away
    if ((*update)->final()) break;
  }
  access_->CloseWatchStream();
  return status;
}

grpc::Status ClientServiceImpl::CancelRun(grpc::ServerContext* context,
                                          const v1::CancelRunRequest* request,
                                          v1::CancelRunResponse* response) {
  return RunChange(
      *access_, *reads_, *context, "cancel", request->run_id(),
      [&](const Principal&) -> absl::StatusOr<v1::CancelRunResponse> {
        ASSIGN_OR_RETURN(const v1::RunState state,
                         coordinator_->CancelRun(request->run_id()));
        v1::CancelRunResponse cancelled;
        cancelled.set_state(state);
        return cancelled;
      },
      "", response);
}

grpc::Status ClientServiceImpl::HoldRun(grpc::ServerContext* context,
                                        const v1::HoldRunRequest* request,
                                        v1::Run* response) {
  return RunChange(
      *access_, *reads_, *context, "hold", request->run_id(),
      [&](const Principal& who) {
        return coordinator_->HoldRun(request->run_id(), who.user);
      },
      "", response);
}

grpc::Status ClientServiceImpl::ReleaseRun(grpc::ServerContext* context,
                                           const v1::ReleaseRunRequest* request,
                                           v1::Run* response) {
  return RunChange(
      *access_, *reads_, *context, "release", request->run_id(),
      [&](const Principal&) {
        return coordinator_->ReleaseRun(request->run_id());
      },
      "", response);
}

grpc::Status ClientServiceImpl::PromoteBaseline(
    grpc::ServerContext* context, const v1::PromoteBaselineRequest* request,
    v1::Baseline* response) {
  return RunChange(
      *access_, *reads_, *context, "promote", request->run_id(),
      [&](const Principal& who) {
        return coordinator_->PromoteBaseline(request->run_id(), who.user);
      },
      "regress baseline of its series", response);
}

grpc::Status ClientServiceImpl::GetBaseline(
    grpc::ServerContext* context, const v1::GetBaselineRequest* request,
    v1::Baseline* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "read a baseline",
      [&] { return coordinator_->GetBaseline(request->spec()); }, response);
}

grpc::Status ClientServiceImpl::ListChanges(
    grpc::ServerContext* context, const v1::ListChangesRequest* request,
    v1::ListChangesResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "list change points",
      [&] { return reads_->ListChanges(*request); }, response);
}

grpc::Status ClientServiceImpl::DrainNode(grpc::ServerContext* context,
                                          const v1::DrainNodeRequest* request,
                                          v1::Node* response) {
  return AuthorizedChange(
      *access_, *context, Action::kManageNodes, "drain",
      absl::StrCat("node ", request->name()),
      [&](const Principal&) {
        return coordinator_->DrainNode(request->name(), request->reason());
      },
      request->reason(), response);
}

grpc::Status ClientServiceImpl::ResumeNode(grpc::ServerContext* context,
                                           const v1::ResumeNodeRequest* request,
                                           v1::Node* response) {
  return AuthorizedChange(
      *access_, *context, Action::kManageNodes, "resume",
      absl::StrCat("node ", request->name()),
      [&](const Principal&) {
        return coordinator_->ResumeNode(request->name());
      },
      "", response);
}

grpc::Status ClientServiceImpl::Preflight(grpc::ServerContext* context,
                                          const v1::PreflightRequest* request,
                                          v1::PreflightResponse* response) {
  return AuthorizedChange(
      *access_, *context, Action::kManageNodes, "preflight",
      request->nodes().empty()
          ? absl::StrCat("queue ",
                         request->queue().empty() ? "(all)" : request->queue())
          : absl::StrCat("nodes ", absl::StrJoin(request->nodes(), ",")),
      [&](const Principal&) { return coordinator_->Preflight(*request); }, "",
      response);
}

grpc::Status ClientServiceImpl::NodeHealth(grpc::ServerContext* context,
                                           const v1::NodeHealthRequest* request,
                                           v1::NodeHealthResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "read node health",
      [&] {
        return coordinator_->NodeHealthOf(
            request->name(),
            request->limit() > 0 ? std::min(request->limit(), 1000) : 20);
      },
      response);
}

grpc::Status ClientServiceImpl::SetMaintenance(
    grpc::ServerContext* context, const v1::SetMaintenanceRequest* request,
    v1::MaintenanceWindow* response) {
  return AuthorizedChange(
      *access_, *context, Action::kManageNodes,
      request->duration_ms() > 0 ? "maintenance start" : "maintenance end",
      request->duration_ms() > 0
          ? absl::StrCat("the coordinator for ", request->duration_ms() / 1000,
                         " s")
          : std::string("the coordinator"),
      [&](const Principal& who) {
        return coordinator_->SetMaintenance(request->duration_ms(),
                                            request->reason(), who.user);
      },
      request->reason(), response);
}

grpc::Status ClientServiceImpl::ListQueues(grpc::ServerContext* context,
                                           const v1::ListQueuesRequest*,
                                           v1::ListQueuesResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "list queues",
      [&] {
        return absl::StatusOr<v1::ListQueuesResponse>(
            coordinator_->ListQueues());
      },
      response);
}

grpc::Status ClientServiceImpl::Leaderboard(
    grpc::ServerContext* context, const v1::LeaderboardRequest* request,
    v1::LeaderboardResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "read the leaderboard",
      [&] { return reads_->Leaderboard(*request); }, response);
}

grpc::Status ClientServiceImpl::ListNodes(grpc::ServerContext* context,
                                          const v1::ListNodesRequest*,
                                          v1::ListNodesResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kRead, "list nodes",
      [&] { return reads_->ListNodes(); }, response);
}

grpc::Status ClientServiceImpl::InvalidateRun(
    grpc::ServerContext* context, const v1::InvalidateRunRequest* request,
    v1::Run* response) {
  return AuthorizedChange(
      *access_, *context, Action::kInvalidate, "invalidate",
      absl::StrCat("run ", request->run_id()),
      [&](const Principal& who) {
        return coordinator_->InvalidateRun(request->run_id(), who.user,
                                           request->reason());
      },
      request->reason(), response);
}

grpc::Status ClientServiceImpl::ListAudit(grpc::ServerContext* context,
                                          const v1::ListAuditRequest* request,
                                          v1::ListAuditResponse* response) {
  return AuthorizedAnswer(
      *access_, *context, Action::kAudit, "read the audit trail",
      [&]() -> absl::StatusOr<v1::ListAuditResponse> {
        ASSIGN_OR_RETURN(
            std::vector<v1::AuditEntry> entries,
            access_->ListAudit(request->limit(), request->before_id()));
        v1::ListAuditResponse listed;
        for (v1::AuditEntry& entry : entries) {
          *listed.add_entries() = std::move(entry);
        }
        return listed;
      },
      response);
}

std::unique_ptr<grpc::Server> StartCoordinatorServer(
    const std::string& address,
    std::shared_ptr<grpc::ServerCredentials> credentials,
    ClientServiceImpl* client, AgentServiceImpl* agents, AccessControl* access,
    int* port, int idle_timeout_s, grpc::Service* more) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, std::move(credentials), port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // one per port
  SetCoordinatorKeepalive(builder, idle_timeout_s * 1000);
  builder.RegisterService(client);
  if (agents != nullptr) builder.RegisterService(agents);
  if (more != nullptr) builder.RegisterService(more);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(access));
  interceptors.push_back(
      std::make_unique<MalformedRequestInterceptorFactory>());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) return nullptr;
  return server;
}

}  // namespace hpcai500
