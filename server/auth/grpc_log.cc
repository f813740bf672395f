#include "server/auth/grpc_log.h"

#include <grpc/support/log.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace hpcai500 {
namespace {

// gRPC 1.51's words (src/core/lib/security/transport/security_handshaker.cc
// and ssl_transport_security.cc); tests/integration/tls_test.cc fails
// should a gRPC upgrade change them.
constexpr absl::string_view kHandshakeFailed = "Security handshake failed: ";
constexpr absl::string_view kSslHandshakeFailed =
    "Handshake failed with fatal error ";
constexpr absl::string_view kTargetAddress = "target_address:\"";

std::atomic<TlsFailureAudit*> route_audit{nullptr};
// The least severity forwarded to the operator log; above ERROR: none.
std::atomic<int> forwarded_severity{GPR_LOG_SEVERITY_ERROR};

// $GRPC_VERBOSITY as gRPC reads it: DEBUG, INFO, ERROR (the default) or
// NONE.
int SeverityFromEnvironment() {
  const char* verbosity = std::getenv("GRPC_VERBOSITY");
  if (verbosity == nullptr) return GPR_LOG_SEVERITY_ERROR;
  if (absl::EqualsIgnoreCase(verbosity, "DEBUG")) return GPR_LOG_SEVERITY_DEBUG;
  if (absl::EqualsIgnoreCase(verbosity, "INFO")) return GPR_LOG_SEVERITY_INFO;
  if (absl::EqualsIgnoreCase(verbosity, "NONE")) {
    return GPR_LOG_SEVERITY_ERROR + 1;
  }
  return GPR_LOG_SEVERITY_ERROR;
}

void RouteLogLine(gpr_log_func_args* args) {
  const absl::string_view message(args->message);
  if (std::optional<GrpcHandshakeFailure> failure =
          ParseGrpcHandshakeFailure(message)) {
    if (TlsFailureAudit* audit = route_audit.load()) {
      audit->Record(kGrpcPort, failure->peer, failure->reason);
      return;
    }
  }
  // OpenSSL's half of the same failure: the audit's line says it, once.
  if (absl::StartsWith(message, kSslHandshakeFailed) &&
      route_audit.load() != nullptr) {
    return;
  }
  if (args->severity < forwarded_severity.load()) return;
  const std::string line =
      absl::StrCat("grpc: ", message, " (", args->file, ":", args->line, ")");
  if (args->severity == GPR_LOG_SEVERITY_ERROR) {
    LogError(line);
  } else {
    LogInfo(line);
  }
}

}  // namespace

std::optional<GrpcHandshakeFailure> ParseGrpcHandshakeFailure(
    absl::string_view message) {
  if (!absl::ConsumePrefix(&message, kHandshakeFailed)) return std::nullopt;
  GrpcHandshakeFailure failure;
  if (size_t at = message.find(kTargetAddress); at != message.npos) {
    absl::string_view peer = message.substr(at + kTargetAddress.size());
    failure.peer = std::string(peer.substr(0, peer.find('"')));
  }
  // "UNKNOWN:Ssl handshake failed: ... {tsi_code:10, ...}": the text
  // between the status code and the properties, and the first child's
  // ("Handshake read failed ... children:[INTERNAL:Socket closed {...").
  auto text = [](absl::string_view error) {
    error = error.substr(0, error.find(" {"));
    const size_t colon = error.find(':');
    if (colon != error.npos && colon > 0 &&
        error.substr(0, colon).find(' ') == error.npos) {
      error.remove_prefix(colon + 1);  // the status code, e.g. "UNKNOWN"
    }
    return std::string(error);
  };
  failure.reason = text(message);
  if (size_t child = message.find("children:["); child != message.npos) {
    absl::StrAppend(&failure.reason, ": ",
                    text(message.substr(child + sizeof("children:[") - 1)));
  }
  return failure;
}

GrpcLogRoute::GrpcLogRoute(TlsFailureAudit* audit) {
  forwarded_severity.store(SeverityFromEnvironment());
  route_audit.store(audit);
  gpr_set_log_function(RouteLogLine);
  // The handshake failure is a DEBUG line: gRPC must hand those over too.
  gpr_set_log_verbosity(GPR_LOG_SEVERITY_DEBUG);
}

GrpcLogRoute::~GrpcLogRoute() { route_audit.store(nullptr); }

}  // namespace hpcai500
