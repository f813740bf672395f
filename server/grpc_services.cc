#include "server/grpc_services.h"

#include <grpc/grpc.h>

#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/closable_queue.h"
#include "common/log.h"
#include "server/tls.h"

namespace hpcai500 {
namespace {

// Set by AuthInterceptor on calls it let through, to "user|role|node"; a
// client cannot forge it because the interceptor first erases whatever the
// client sent under it.
constexpr char kPrincipalKey[] = "x-hpcai500-principal";

// The caller the interceptor vouched for; nullopt when it vouched for none
// (it then already ended the call UNAUTHENTICATED).
std::optional<Principal> PrincipalOf(const grpc::ServerContext& context) {
  auto it = context.client_metadata().find(kPrincipalKey);
  if (it == context.client_metadata().end()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(
      absl::string_view(it->second.data(), it->second.size()), '|');
  if (parts.size() != 3) return std::nullopt;
  absl::StatusOr<Role> role = ParseRole(parts[1]);
  if (!role.ok()) return std::nullopt;
  return Principal{parts[0], *role, parts[2]};
}

grpc::Status Unauthenticated() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong 'authorization: Bearer' token");
}

// The bearer token of a call's metadata ("" when none).
std::string BearerToken(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return "";
  const absl::string_view value(it->second.data(), it->second.size());
  return absl::StartsWith(value, "Bearer ")
             ? std::string(value.substr(sizeof("Bearer ") - 1))
             : "";
}

class AuthInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(grpc::experimental::ServerRpcInfo* info,
                  AccessControl* access)
      : info_(info), access_(access) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                POST_RECV_INITIAL_METADATA)) {
      auto* metadata = methods->GetRecvInitialMetadata();
      metadata->erase(kPrincipalKey);
      absl::StatusOr<Principal> who =
          access_->Authenticate(BearerToken(*metadata));
      if (who.ok()) {
        principal_ =
            absl::StrCat(who->user, "|", RoleName(who->role), "|", who->node);
        metadata->emplace(kPrincipalKey, principal_);
      } else {
        const std::string peer = info_->server_context()->peer();
        LogWarning(absl::StrCat("refusing ", info_->method(), " from ", peer,
                                ": ", who.status().message()));
        access_->Audit(nullptr, "refused", info_->method(), peer,
                       /*allowed=*/false, who.status().message());
        grpc_call_cancel_with_status(
            info_->server_context()->c_call(),
            static_cast<grpc_status_code>(who.status().code()),
            std::string(who.status().message()).c_str(), nullptr);
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  AccessControl* const access_;
  std::string principal_;  // what the metadata points into, for the call
};

// The queue of messages the coordinator has for one agent; the stream's
// owner thread drains it.
class Outbox final : public AgentChannel {
 public:
  void Send(const v1::CoordinatorMessage& message) override {
    queue_.Push(message);
  }
  void Close() { queue_.Close(); }
  // The next message; nullopt after `timeout` or once closed.
  std::optional<v1::CoordinatorMessage> Pop(absl::Duration timeout,
                                            bool* closed) {
    return queue_.Pop(timeout, closed);
  }

 private:
  ClosableQueue<v1::CoordinatorMessage> queue_;
};

constexpr absl::Duration kPollInterval = absl::Milliseconds(200);

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::experimental::Interceptor*
AuthInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new AuthInterceptor(info, access_);
}

namespace {

// The principal of a call allowed to do `action` on `target` into *who, or
// the status that refuses it (audited).
grpc::Status Authorize(AccessControl& access,
                       const grpc::ServerContext& context, Action action,
                       absl::string_view target, Principal* who) {
  std::optional<Principal> found = PrincipalOf(context);
  if (!found.has_value()) return Unauthenticated();
  *who = *std::move(found);
  return ToGrpcStatus(access.Require(*who, action, target, context.peer()));
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
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ClientServiceImpl::Submit(grpc::ServerContext* context,
                                       const v1::SubmitRequest* request,
                                       v1::SubmitResponse* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kSubmit, "submit", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::SubmitResponse> submitted =
      coordinator_->Submit(request->spec_yaml(), who.user,
                           access_->limits().max_queued_runs_per_user);
  access_->Audit(
      &who, "submit",
      submitted.ok()
          ? absl::StrCat("submission ", submitted->submission_id(), " (runs ",
                         absl::StrJoin(submitted->run_ids(), ", "), ")")
          : std::string("a spec"),
      context->peer(), submitted.ok(),
      submitted.ok() ? "" : submitted.status().message());
  if (!submitted.ok()) return ToGrpcStatus(submitted.status());
  *response = *std::move(submitted);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetRun(grpc::ServerContext* context,
                                       const v1::GetRunRequest* request,
                                       v1::Run* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kRead, "read a run", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::Run> run = coordinator_->GetRun(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListRuns(grpc::ServerContext* context,
                                         const v1::ListRunsRequest* request,
                                         v1::ListRunsResponse* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kRead, "list runs", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::ListRunsResponse> runs = coordinator_->ListRuns(*request);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  *response = *std::move(runs);
  return grpc::Status::OK;
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

grpc::Status ClientServiceImpl::AuthorizeRunChange(grpc::ServerContext& context,
                                                   const std::string& verb,
                                                   int64_t run_id,
                                                   Principal* who) {
  const std::string target = absl::StrCat("run ", run_id);
  grpc::Status allowed =
      Authorize(*access_, context, Action::kChangeOwnRun, target, who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::Run> run = coordinator_->GetRun(run_id);
  if (!run.ok()) return ToGrpcStatus(run.status());
  if (!Allows(who->role, Action::kChangeAnyRun) && run->user() != who->user) {
    const std::string why = absl::StrCat(
        "it belongs to ", run->user().empty() ? "nobody" : run->user(),
        "; an operator may ", verb, " only its own runs");
    access_->Audit(who, verb, target, context.peer(), /*allowed=*/false, why);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(target, ": ", why));
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::CancelRun(grpc::ServerContext* context,
                                          const v1::CancelRunRequest* request,
                                          v1::CancelRunResponse* response) {
  Principal who;
  grpc::Status allowed =
      AuthorizeRunChange(*context, "cancel", request->run_id(), &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::RunState> state =
      coordinator_->CancelRun(request->run_id());
  access_->Audit(&who, "cancel", absl::StrCat("run ", request->run_id()),
                 context->peer(), state.ok(),
                 state.ok() ? "" : state.status().message());
  if (!state.ok()) return ToGrpcStatus(state.status());
  response->set_state(*state);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::HoldRun(grpc::ServerContext* context,
                                        const v1::HoldRunRequest* request,
                                        v1::Run* response) {
  Principal who;
  grpc::Status allowed =
      AuthorizeRunChange(*context, "hold", request->run_id(), &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer(
      *access_, who, *context, "hold", absl::StrCat("run ", request->run_id()),
      coordinator_->HoldRun(request->run_id(), who.user), "", response);
}

grpc::Status ClientServiceImpl::ReleaseRun(grpc::ServerContext* context,
                                           const v1::ReleaseRunRequest* request,
                                           v1::Run* response) {
  Principal who;
  grpc::Status allowed =
      AuthorizeRunChange(*context, "release", request->run_id(), &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer(*access_, who, *context, "release",
                       absl::StrCat("run ", request->run_id()),
                       coordinator_->ReleaseRun(request->run_id()), "",
                       response);
}

grpc::Status ClientServiceImpl::DrainNode(grpc::ServerContext* context,
                                          const v1::DrainNodeRequest* request,
                                          v1::Node* response) {
  const std::string target = absl::StrCat("node ", request->name());
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kManageNodes, target, &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer(
      *access_, who, *context, "drain", target,
      coordinator_->DrainNode(request->name(), request->reason()),
      request->reason(), response);
}

grpc::Status ClientServiceImpl::ResumeNode(grpc::ServerContext* context,
                                           const v1::ResumeNodeRequest* request,
                                           v1::Node* response) {
  const std::string target = absl::StrCat("node ", request->name());
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kManageNodes, target, &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer(*access_, who, *context, "resume", target,
                       coordinator_->ResumeNode(request->name()), "", response);
}

grpc::Status ClientServiceImpl::ListQueues(grpc::ServerContext* context,
                                           const v1::ListQueuesRequest*,
                                           v1::ListQueuesResponse* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kRead, "list queues", &who);
  if (!allowed.ok()) return allowed;
  *response = coordinator_->ListQueues();
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::Leaderboard(
    grpc::ServerContext* context, const v1::LeaderboardRequest* request,
    v1::LeaderboardResponse* response) {
  Principal who;
  grpc::Status allowed = Authorize(*access_, *context, Action::kRead,
                                   "read the leaderboard", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::LeaderboardResponse> board =
      coordinator_->Leaderboard(*request);
  if (!board.ok()) return ToGrpcStatus(board.status());
  *response = *std::move(board);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListNodes(grpc::ServerContext* context,
                                          const v1::ListNodesRequest*,
                                          v1::ListNodesResponse* response) {
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kRead, "list nodes", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<v1::ListNodesResponse> nodes = coordinator_->ListNodes();
  if (!nodes.ok()) return ToGrpcStatus(nodes.status());
  *response = *std::move(nodes);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::InvalidateRun(
    grpc::ServerContext* context, const v1::InvalidateRunRequest* request,
    v1::Run* response) {
  const std::string target = absl::StrCat("run ", request->run_id());
  Principal who;
  grpc::Status allowed =
      Authorize(*access_, *context, Action::kInvalidate, target, &who);
  if (!allowed.ok()) return allowed;
  return AuditedAnswer(*access_, who, *context, "invalidate", target,
                       coordinator_->InvalidateRun(request->run_id(), who.user,
                                                   request->reason()),
                       request->reason(), response);
}

grpc::Status ClientServiceImpl::ListAudit(grpc::ServerContext* context,
                                          const v1::ListAuditRequest* request,
                                          v1::ListAuditResponse* response) {
  Principal who;
  grpc::Status allowed = Authorize(*access_, *context, Action::kAudit,
                                   "read the audit trail", &who);
  if (!allowed.ok()) return allowed;
  absl::StatusOr<std::vector<v1::AuditEntry>> entries =
      access_->ListAudit(request->limit(), request->before_id());
  if (!entries.ok()) return ToGrpcStatus(entries.status());
  for (v1::AuditEntry& entry : *entries) {
    *response->add_entries() = std::move(entry);
  }
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::Connect(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>*
        stream) {
  Principal who;
  grpc::Status allowed = Authorize(*access_, *context, Action::kRegisterNode,
                                   "register a node", &who);
  if (!allowed.ok()) return allowed;
  if (absl::Status open = access_->OpenAgentStream(); !open.ok()) {
    return ToGrpcStatus(open);
  }
  grpc::Status status = ServeAgent(context, who, stream);
  access_->CloseAgentStream();
  return status;
}

grpc::Status AgentServiceImpl::ServeAgent(
    grpc::ServerContext* context, const Principal& who,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>*
        stream) {
  v1::AgentMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;  // left at once
  if (!first.has_register_()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of an agent stream must be a "
                        "Register");
  }
  const std::string node = first.register_().name();
  const std::string target = absl::StrCat("node ", node.substr(0, 64));
  if (!who.node.empty() && who.node != node) {
    const std::string why =
        absl::StrCat("the token of ", who.user, " is bound to node ", who.node,
                     "; it cannot register as ", node.substr(0, 64));
    LogWarning(
        absl::StrCat("refusing an agent from ", context->peer(), ": ", why));
    access_->Audit(&who, "register", target, context->peer(),
                   /*allowed=*/false, why);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, why);
  }
  if (check_agent_certificates_) {
    absl::Status vouched =
        CheckAgentCertificate(*context->auth_context(), node);
    if (!vouched.ok()) {
      LogWarning(absl::StrCat("refusing an agent from ", context->peer(), ": ",
                              vouched.message()));
      access_->Audit(&who, "register", target, context->peer(),
                     /*allowed=*/false, vouched.message());
      return ToGrpcStatus(vouched);
    }
  }
  Outbox outbox;
  absl::StatusOr<int64_t> session =
      coordinator_->Connect(first.register_(), &outbox);
  access_->Audit(&who, "register", target, context->peer(), session.ok(),
                 session.ok() ? "" : session.status().message());
  if (!session.ok()) {
    LogWarning(absl::StrCat("refusing an agent from ", context->peer(), ": ",
                            session.status().message()));
    return ToGrpcStatus(session.status());
  }
  std::thread reader([&] {
    v1::AgentMessage message;
    while (stream->Read(&message)) {
      absl::Status handled =
          coordinator_->HandleAgentMessage(*session, message);
      if (absl::IsFailedPrecondition(handled)) break;  // replaced
      if (!handled.ok()) {
        LogWarning(absl::StrCat("node ", node, ": ", handled.message()));
      }
    }
    outbox.Close();
  });
  bool closed = false;
  while (!closed) {
    if (context->IsCancelled()) break;
    std::optional<v1::CoordinatorMessage> message =
        outbox.Pop(kPollInterval, &closed);
    if (message.has_value() && !stream->Write(*message)) break;
  }
  coordinator_->Disconnect(*session);
  if (!closed) context->TryCancel();  // unblocks the reader's Read
  reader.join();
  return grpc::Status::OK;
}

}  // namespace hpcai500
