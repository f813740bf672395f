// What every gRPC call of hpcai500d shares: the one mapping of statuses
// (common/error_cause.h), the message cap, and who the caller is: the auth
// interceptor vouches for it, Authorize checks its role, a stream authenticates
// itself.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_GRPC_CALLS_H_
#define HPCAI500_SERVER_GRPC_CALLS_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/error_cause.h"  // ToGrpcStatus, the one mapping of statuses
#include "server/auth/access_control.h"

namespace hpcai500 {

// The largest message a client or an agent may send (a batch of events).
inline constexpr int kMaxReceiveMessageBytes = 8 * 1024 * 1024;

// The caller a call's metadata (`authorization: Bearer <token>`) vouches
// for (AccessControl::Authenticate). A refusal is logged and audited,
// naming `method` and `peer`.
absl::StatusOr<Principal> AuthenticateCall(
    AccessControl& access,
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    absl::string_view method, const std::string& peer);

// The principal of a call (as the interceptor vouched for it) allowed to do
// `action` on `target` into *who, or the status that refuses it (audited).
grpc::Status Authorize(AccessControl& access,
                       const grpc::ServerContext& context, Action action,
                       absl::string_view target, Principal* who);

// AgentService.Connect, which authenticates itself once (AgentStream).
const std::string& AgentConnectMethod();

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

// Names a request whose bytes are no valid message of its type. gRPC's
// generated handlers answer a failed parse with INTERNAL and an empty
// message (grpcpp/impl/codegen/proto_utils.h: the status of
// GenericDeserialize, a proto3 message's empty InitializationErrorString)
// and never call the handler; this interceptor sees the parse fail (the
// received message is null after POST_RECV_MESSAGE) and turns that status
// into INVALID_ARGUMENT naming the method, the caller's fault it is.
// Like AuthInterceptorFactory it creates none for AgentService.Connect,
// whose stream ends at a message that does not parse.
class MalformedRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_GRPC_CALLS_H_
