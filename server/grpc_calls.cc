#include "server/grpc_calls.h"

#include <grpc/grpc.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "proto/hpcai500.grpc.pb.h"

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

class MalformedRequestInterceptor final
    : public grpc::experimental::Interceptor {
 public:
  explicit MalformedRequestInterceptor(grpc::experimental::ServerRpcInfo* info)
      : info_(info) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      malformed_ = true;
    }
    if (malformed_ &&
        methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS) &&
        methods->GetSendStatus().error_code() == grpc::StatusCode::INTERNAL) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("the request to ", info_->method(),
                       " is not a valid protobuf message of its type: its "
                       "bytes do not parse")));
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  bool malformed_ = false;  // the request's bytes did not parse
};

}  // namespace

grpc::experimental::Interceptor*
MalformedRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (info->method() == AgentConnectMethod()) return nullptr;
  return new MalformedRequestInterceptor(info);
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

grpc::experimental::Interceptor*
AuthInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  if (info->method() == AgentConnectMethod()) return nullptr;
  return new AuthInterceptor(info, access_);
}

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

}  // namespace hpcai500
