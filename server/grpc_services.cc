#include "server/grpc_services.h"

#include <grpc/grpc.h>

#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/closable_queue.h"
#include "common/log.h"
#include "server/tls.h"

namespace hpcai500 {
namespace {

// Set by AuthInterceptor on calls it let through; a client cannot forge it
// because the interceptor first erases whatever the client sent under it.
constexpr char kPrincipalKey[] = "x-hpcai500-principal";
constexpr char kAnyPrincipal[] = "token";

// Handlers act only on calls the interceptor vouched for. The interceptor
// already ended a refused call UNAUTHENTICATED; this keeps its handler from
// doing anything meanwhile.
bool Authenticated(const grpc::ServerContext& context) {
  return context.client_metadata().count(kPrincipalKey) > 0;
}

grpc::Status Unauthenticated() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong 'authorization: Bearer' token");
}

class AuthInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuthInterceptor(grpc::experimental::ServerRpcInfo* info,
                  const std::string* token)
      : info_(info), token_(token) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                POST_RECV_INITIAL_METADATA)) {
      auto* metadata = methods->GetRecvInitialMetadata();
      metadata->erase(kPrincipalKey);
      if (Allowed(*metadata)) {
        metadata->emplace(kPrincipalKey, kAnyPrincipal);
      } else {
        LogWarning(absl::StrCat("refusing ", info_->method(),
                                ": missing or wrong bearer token"));
        grpc_call_cancel_with_status(
            info_->server_context()->c_call(), GRPC_STATUS_UNAUTHENTICATED,
            "missing or wrong 'authorization: Bearer' token", nullptr);
      }
    }
    methods->Proceed();
  }

 private:
  bool Allowed(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
    if (token_->empty()) return true;
    const std::string expected = "Bearer " + *token_;
    auto range = metadata.equal_range("authorization");
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.size() == expected.size() &&
          std::equal(it->second.begin(), it->second.end(), expected.begin())) {
        return true;
      }
    }
    return false;
  }

  grpc::experimental::ServerRpcInfo* const info_;
  const std::string* const token_;  // owned by the factory
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
  return new AuthInterceptor(info, &token_);
}

grpc::Status ClientServiceImpl::Submit(grpc::ServerContext* context,
                                       const v1::SubmitRequest* request,
                                       v1::SubmitResponse* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::SubmitResponse> submitted =
      coordinator_->Submit(request->spec_yaml());
  if (!submitted.ok()) return ToGrpcStatus(submitted.status());
  *response = *std::move(submitted);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::GetRun(grpc::ServerContext* context,
                                       const v1::GetRunRequest* request,
                                       v1::Run* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::Run> run = coordinator_->GetRun(request->run_id());
  if (!run.ok()) return ToGrpcStatus(run.status());
  *response = *std::move(run);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListRuns(grpc::ServerContext* context,
                                         const v1::ListRunsRequest* request,
                                         v1::ListRunsResponse* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::ListRunsResponse> runs = coordinator_->ListRuns(*request);
  if (!runs.ok()) return ToGrpcStatus(runs.status());
  *response = *std::move(runs);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::WatchRun(
    grpc::ServerContext* context, const v1::WatchRunRequest* request,
    grpc::ServerWriter<v1::RunUpdate>* writer) {
  if (!Authenticated(*context)) return Unauthenticated();
  Coordinator::WatchCursor cursor;
  while (!context->IsCancelled()) {
    absl::StatusOr<std::optional<v1::RunUpdate>> update =
        coordinator_->NextRunUpdate(request->run_id(), &cursor, kPollInterval);
    if (!update.ok()) return ToGrpcStatus(update.status());
    if (!update->has_value()) continue;
    if (!writer->Write(**update)) break;  // the watcher went away
    if ((*update)->final()) break;
  }
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::CancelRun(grpc::ServerContext* context,
                                          const v1::CancelRunRequest* request,
                                          v1::CancelRunResponse* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::RunState> state =
      coordinator_->CancelRun(request->run_id());
  if (!state.ok()) return ToGrpcStatus(state.status());
  response->set_state(*state);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::Leaderboard(
    grpc::ServerContext* context, const v1::LeaderboardRequest* request,
    v1::LeaderboardResponse* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::LeaderboardResponse> board =
      coordinator_->Leaderboard(*request);
  if (!board.ok()) return ToGrpcStatus(board.status());
  *response = *std::move(board);
  return grpc::Status::OK;
}

grpc::Status ClientServiceImpl::ListNodes(grpc::ServerContext* context,
                                          const v1::ListNodesRequest*,
                                          v1::ListNodesResponse* response) {
  if (!Authenticated(*context)) return Unauthenticated();
  absl::StatusOr<v1::ListNodesResponse> nodes = coordinator_->ListNodes();
  if (!nodes.ok()) return ToGrpcStatus(nodes.status());
  *response = *std::move(nodes);
  return grpc::Status::OK;
}

grpc::Status AgentServiceImpl::Connect(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::AgentMessage>*
        stream) {
  if (!Authenticated(*context)) return Unauthenticated();
  v1::AgentMessage first;
  if (!stream->Read(&first)) return grpc::Status::OK;  // left at once
  if (!first.has_register_()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of an agent stream must be a "
                        "Register");
  }
  if (check_agent_certificates_) {
    absl::Status vouched = CheckAgentCertificate(*context->auth_context(),
                                                 first.register_().name());
    if (!vouched.ok()) {
      LogWarning(absl::StrCat("refusing an agent from ", context->peer(), ": ",
                              vouched.message()));
      return ToGrpcStatus(vouched);
    }
  }
  Outbox outbox;
  absl::StatusOr<int64_t> session =
      coordinator_->Connect(first.register_(), &outbox);
  if (!session.ok()) {
    LogWarning(absl::StrCat("refusing an agent from ", context->peer(), ": ",
                            session.status().message()));
    return ToGrpcStatus(session.status());
  }
  const std::string node = first.register_().name();
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
