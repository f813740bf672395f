#include "server/grpc_services.h"

#include <grpc/grpc.h>

#include <deque>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/keepalive.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/auth/tls.h"

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

// The caller a call's metadata vouches for (AccessControl::Authenticate). A
// refusal is logged and audited, naming `method` and `peer`.
absl::StatusOr<Principal> AuthenticateCall(
    AccessControl& access,
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    absl::string_view method, const std::string& peer) {
  absl::StatusOr<Principal> who = access.Authenticate(BearerToken(metadata));
  if (!who.ok()) {
    LogWarning(absl::StrCat("refusing ", method, " from ", peer, ": ",
                            who.status().message()));
    access.Audit(nullptr, "refused", method, peer, /*allowed=*/false,
                 who.status().message());
  }
  return who;
}

// The method AgentStream serves without an interceptor.
const std::string& AgentConnectMethod() {
  static const std::string* const method = new std::string(
      absl::StrCat("/", v1::AgentService::service_full_name(), "/Connect"));
  return *method;
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
          AuthenticateCall(*access_, *metadata, info_->method(),
                           info_->server_context()->peer());
      if (who.ok()) {
        principal_ =
            absl::StrCat(who->user, "|", RoleName(who->role), "|", who->node);
        metadata->emplace(kPrincipalKey, principal_);
      } else {
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
  if (info->method() == AgentConnectMethod()) return nullptr;
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

// One agent's stream on the callback API; it deletes itself in OnDone().
//
// Reads: one at a time, each handed to the coordinator before the next is
// asked for, so an agent's messages are handled in the order it sent them.
// The first must be a Register. Only gRPC calls the read path (OnReadDone),
// never two at once, so it needs no lock.
//
// Writes: Send() (the coordinator's AgentChannel, called with its mutex
// held) queues the message and starts a write when none is in flight,
// unless the read path is in the coordinator: it then starts the write
// itself once the coordinator's mutex is free, so the send to the socket
// happens outside that lock. OnWriteDone starts the next. Neither blocks or
// calls back into the coordinator. The stream ends on the read path only: when
// the agent leaves, the call is cancelled (keepalive, shutdown, a failed write)
// or the session was replaced. Then it leaves the coordinator, which sends
// nothing after Disconnect() returns, and finishes once the write in
// flight, if any, is done; messages still queued are dropped, as the agent
// is gone.
class AgentStream final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>,
      public AgentChannel {
 public:
  // Authenticates and authorizes the caller and counts the stream, or
  // finishes at once with the refusal. The arguments are borrowed for the
  // stream's life.
  AgentStream(grpc::CallbackServerContext* context, Coordinator* coordinator,
              AccessControl* access, bool check_certificates, LiveStreams* live)
      : context_(context),
        coordinator_(coordinator),
        access_(access),
        check_certificates_(check_certificates),
        live_(live) {
    live_->Add();
    grpc::Status allowed = Admit();
    if (!allowed.ok()) {
      Finish(allowed);
      return;
    }
    StartRead(&incoming_);
  }

  void Send(const v1::CoordinatorMessage& message) override {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      outgoing_.push_back(message);
      // The read path starts the write once the coordinator let go of its
      // mutex (most messages answer the agent's own: heartbeats, acks).
      if (handling_) return;
    }
    StartWriteIfIdle();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent left, or the call was cancelled
      End(grpc::Status::OK);
      return;
    }
    if (!session_.has_value()) {
      SetHandling(true);
      grpc::Status registered = Register();
      SetHandling(false);
      StartWriteIfIdle();
      if (!registered.ok()) {
        End(registered);
        return;
      }
    } else {
      SetHandling(true);
      absl::Status handled =
          coordinator_->HandleAgentMessage(*session_, incoming_);
      SetHandling(false);
      StartWriteIfIdle();
      if (absl::IsFailedPrecondition(handled)) {  // replaced
        End(grpc::Status::OK);
        return;
      }
      if (!handled.ok()) {
        LogWarning(absl::StrCat("node ", node_, ": ", handled.message()));
      }
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    // While writing_ is set End() cannot finish, so `this` stays; the
    // pending read fails and ends the stream.
    if (!ok) context_->TryCancel();
    const v1::CoordinatorMessage* next = nullptr;
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      outgoing_.pop_front();
      if (!ok) {  // the agent is gone: write nothing more
        ended_ = true;
        outgoing_.clear();
      }
      if (!ended_ && !outgoing_.empty()) {
        next = &outgoing_.front();
      } else {
        writing_ = false;
        finish = std::exchange(finish_, std::nullopt);
      }
    }
    if (next != nullptr) {
      StartWrite(next);
    } else if (finish.has_value()) {
      Finish(*finish);  // `this` may be gone after this call
    }
  }

  void OnDone() override {
    if (counted_) access_->CloseAgentStream();
    LiveStreams* live = live_;
    delete this;
    live->Remove();  // last: what the stream borrowed may go now
  }

 private:
  // The caller's token, its right to register a node and the stream cap;
  // counts the stream when all pass.
  grpc::Status Admit() {
    absl::StatusOr<Principal> who =
        AuthenticateCall(*access_, context_->client_metadata(),
                         AgentConnectMethod(), context_->peer());
    if (!who.ok()) return ToGrpcStatus(who.status());
    who_ = *std::move(who);
    grpc::Status allowed = ToGrpcStatus(access_->Require(
        who_, Action::kRegisterNode, "register a node", context_->peer()));
    if (!allowed.ok()) return allowed;
    grpc::Status open = ToGrpcStatus(access_->OpenAgentStream());
    counted_ = open.ok();
    return open;
  }

  // The first message: a Register for the node the caller may act as (its
  // token's node, and its certificate's with --tls-client-ca). Refusals
  // are audited, as is the registration.
  grpc::Status Register() {
    if (!incoming_.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the first message of an agent stream must be a "
                          "Register");
    }
    node_ = incoming_.register_().name();
    const std::string target = absl::StrCat("node ", node_.substr(0, 64));
    const std::string peer = context_->peer();
    if (!who_.node.empty() && who_.node != node_) {
      const std::string why = absl::StrCat(
          "the token of ", who_.user, " is bound to node ", who_.node,
          "; it cannot register as ", node_.substr(0, 64));
      LogWarning(absl::StrCat("refusing an agent from ", peer, ": ", why));
      access_->Audit(&who_, "register", target, peer, /*allowed=*/false, why);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, why);
    }
    if (check_certificates_) {
      absl::Status vouched =
          CheckAgentCertificate(*context_->auth_context(), node_);
      if (!vouched.ok()) {
        LogWarning(absl::StrCat("refusing an agent from ", peer, ": ",
                                vouched.message()));
        access_->Audit(&who_, "register", target, peer, /*allowed=*/false,
                       vouched.message());
        return ToGrpcStatus(vouched);
      }
    }
    absl::StatusOr<int64_t> session =
        coordinator_->Connect(incoming_.register_(), this);
    access_->Audit(&who_, "register", target, peer, session.ok(),
                   session.ok() ? "" : session.status().message());
    if (!session.ok()) {
      LogWarning(absl::StrCat("refusing an agent from ", peer, ": ",
                              session.status().message()));
      return ToGrpcStatus(session.status());
    }
    session_ = *session;
    return grpc::Status::OK;
  }

  void SetHandling(bool handling) {
    absl::MutexLock lock(&mu_);
    handling_ = handling;
  }

  // Starts writing the oldest queued message unless a write is in flight
  // (OnWriteDone goes on from there) or the stream ended.
  void StartWriteIfIdle() {
    const v1::CoordinatorMessage* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || writing_ || outgoing_.empty()) return;
      writing_ = true;
      next = &outgoing_.front();  // deque: stays put while others are added
    }
    StartWrite(next);
  }

  // Leaves the coordinator and finishes with `status` once no write is in
  // flight (else OnWriteDone finishes).
  void End(grpc::Status status) {
    if (session_.has_value()) coordinator_->Disconnect(*session_);
    {
      absl::MutexLock lock(&mu_);
      ended_ = true;
      if (writing_) {
        finish_ = std::move(status);
        return;
      }
    }
    Finish(status);  // `this` may be gone after this call
  }

  // Constant after construction.
  grpc::CallbackServerContext* const context_;
  Coordinator* const coordinator_;
  AccessControl* const access_;
  const bool check_certificates_;
  LiveStreams* const live_;  // the service's count of live streams

  // The read path's: set before the first read, or by it.
  Principal who_;
  bool counted_ = false;  // by AccessControl::OpenAgentStream
  std::string node_;
  std::optional<int64_t> session_;  // once registered
  v1::AgentMessage incoming_;

  absl::Mutex mu_;
  // Front: the message being written while writing_.
  std::deque<v1::CoordinatorMessage> outgoing_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // The read path is in the coordinator: Send() leaves the write to it.
  bool handling_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // no more writes
  // The status End() left for OnWriteDone to finish with.
  std::optional<grpc::Status> finish_ ABSL_GUARDED_BY(mu_);
};

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

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>*
AgentServiceImpl::Connect(grpc::CallbackServerContext* context) {
  return new AgentStream(context, coordinator_, access_,
                         check_agent_certificates_, &live_);
}

AgentServiceImpl::~AgentServiceImpl() { WaitForStreams(); }

void AgentServiceImpl::WaitForStreams() { live_.WaitForNone(); }

void LiveStreams::Add() {
  absl::MutexLock lock(&mu_);
  ++count_;
}

void LiveStreams::Remove() {
  absl::MutexLock lock(&mu_);
  --count_;
}

void LiveStreams::WaitForNone() {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ == 0; };
  mu_.Await(absl::Condition(&none));
}

std::unique_ptr<grpc::Server> StartCoordinatorServer(
    const std::string& address,
    std::shared_ptr<grpc::ServerCredentials> credentials,
    ClientServiceImpl* client, AgentServiceImpl* agents, AccessControl* access,
    int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, std::move(credentials), port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // one per port
  SetCoordinatorKeepalive(builder);
  builder.RegisterService(client);
  if (agents != nullptr) builder.RegisterService(agents);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(access));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) return nullptr;
  return server;
}

}  // namespace hpcai500
