// hpcai500d's command line: its flags into ServerOptions, checked before
// anything is opened, and the CoordinatorOptions they make.
//
// Thread-safe: plain values and functions of their arguments.
#ifndef HPCAI500_SERVER_OPTIONS_H_
#define HPCAI500_SERVER_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/keepalive.h"
#include "common/tls_files.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"
#include "server/http/http_server.h"
#include "server/store/leaderboard.h"

namespace hpcai500 {

// The usage text, printed with --help and after a flag error.
extern const char kServerUsage[];

// The pages' folder this binary was built with (web/ of its source tree).
std::string DefaultWebDir();

struct ServerOptions {
  std::string grpc = "127.0.0.1:7500";
  std::string http = "127.0.0.1:7580";
  std::string db = "./hpcai500.db";
  std::string web_dir = DefaultWebDir();
  std::string token_file;
  std::string queues;
  // POSTs each new change point in a bad direction here
  // (server/http/change_webhook.h); empty: none.
  std::string change_webhook;
  int node_timeout_s = 60;
  int heartbeat_interval_s = 0;  // 0: HeartbeatIntervalMs's default
  int max_queued_per_user = AccessLimits{}.max_queued_runs_per_user;
  int max_agent_streams = AccessLimits{}.max_agent_streams;
  int node_retention_hours = 24;
  // A gRPC connection without a call for this long is closed (GOAWAY); a
  // client reconnects on its next call, an agent's stream is a call.
  int grpc_idle_timeout_s = kDefaultGrpcIdleTimeoutS;
  int http_max_connections = HttpServer::kDefaultMaxConnections;
  int http_max_connections_per_client =
      HttpServer::kDefaultMaxConnectionsPerClient;
  // The leaderboard's repeatability marks (--max-throughput-cv,
  // --max-epochs-cv, in percent on the command line).
  SpreadLimits spread;
  // --outlier-z, --outlier-min-change, --drain-on-flag,
  // --preflight-budget-ms, --preflight-timeout-s (node health).
  NodeHealthOptions node_health;
  bool http_public = false;
  bool insecure = false;
  bool ignore_sigterm = false;
  TlsFileFlags tls;
  bool help = false;
};

// The command line (without argv[0]) by the rules of common/flags.h.
// InvalidArgument naming the flag at fault: an unknown flag, a number out of
// its range, a --grpc or --http that is not HOST:PORT with a port from 0 to
// 65535 (common/host_port.h), a heartbeat longer than a third of the node
// timeout.
absl::StatusOr<ServerOptions> ParseServerOptions(
    const std::vector<std::string>& args);

// What the flags ask of the coordinator: its timeouts and, with --queues,
// the queues read from that file. InvalidArgument naming the file.
absl::StatusOr<CoordinatorOptions> CoordinatorOptionsFrom(
    const ServerOptions& flags);

// Whether "HOST:PORT" listens on loopback only.
bool IsLoopback(const std::string& host_port);

// hpcai500d's exposure rule: without auth (no token exists, no
// --token-file) and without TLS it listens beyond loopback only with
// --insecure. FailedPrecondition saying how to fix it otherwise.
absl::Status CheckExposure(const ServerOptions& flags, bool auth, bool tls);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_OPTIONS_H_
