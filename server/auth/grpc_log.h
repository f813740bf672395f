// gRPC's own log lines, taken over by hpcai500d. gRPC 1.51 fails a TLS
// handshake on its port before any hook of ours runs and says so only in
// its log (a DEBUG line "Security handshake failed: ..." per connection, the
// peer's address only when the socket broke), so the log function is the
// one place that sees every failure: each goes to a TlsFailureAudit. The
// other lines go on to the operator log as gRPC would have printed them,
// those at or above $GRPC_VERBOSITY (ERROR when unset), prefixed "grpc:".
//
// Thread-safe.
#ifndef HPCAI500_SERVER_AUTH_GRPC_LOG_H_
#define HPCAI500_SERVER_AUTH_GRPC_LOG_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "server/auth/tls_failures.h"

namespace hpcai500 {

struct GrpcHandshakeFailure {
  std::string peer;    // "ipv4:10.0.0.5:41234", or "" when gRPC names none
  std::string reason;  // e.g. "Ssl handshake failed: SSL_ERROR_SSL: ..."
};

// The failure a gRPC log message reports ("Security handshake failed: "
// then gRPC's error text), nullopt for any other message.
std::optional<GrpcHandshakeFailure> ParseGrpcHandshakeFailure(
    absl::string_view message);

// While it lives, gRPC's log lines go through hpcai500d: handshake failures
// to `audit` (borrowed; it must outlive this), the rest to the operator
// log. One at a time; make it before the gRPC server starts and let it go
// after the server is shut down.
class GrpcLogRoute {
 public:
  explicit GrpcLogRoute(TlsFailureAudit* audit);
  ~GrpcLogRoute();  // later handshake failures are only logged
  GrpcLogRoute(const GrpcLogRoute&) = delete;
  GrpcLogRoute& operator=(const GrpcLogRoute&) = delete;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_GRPC_LOG_H_
