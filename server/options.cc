#include "server/options.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/flag_file.h"
#include "common/flags.h"
#include "common/host_port.h"
#include "common/status_macros.h"
#include "server/coordinator/node_timing.h"
#include "server/coordinator/queues.h"

namespace hpcai500 {

const char kServerUsage[] =
    "usage: hpcai500d [--grpc HOST:PORT] [--http HOST:PORT] [--db FILE]\n"
    "                 [--web-dir DIR] [--token-file FILE] "
    "[--node-timeout-s N]\n"
    "                 [--http-max-connections N] [--http-public] "
    "[--insecure]\n"
    "                 [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
    "                 [--queues FILE] [--heartbeat-interval-s N]\n"
    "                 [--max-queued-per-user N] [--node-retention-hours N]\n"
    "                 [--max-agent-streams N]\n"
    "                 [--max-throughput-cv PCT] [--max-epochs-cv PCT]\n"
    "                 [--grpc-idle-timeout-s N] [--ignore-sigterm]\n"
    "                 [--change-webhook http://HOST[:PORT]/PATH]\n"
    "                 [--outlier-z Z] [--outlier-min-change PCT] "
    "[--drain-on-flag]\n"
    "                 [--preflight-budget-ms N] [--preflight-timeout-s N]\n"
    "       hpcai500d token create|list|revoke ... (hpcai500d token --help)\n"
    "       hpcai500d backup --db FILE --out FILE (while it runs, too)\n"
    "       hpcai500d --version\n"
    "auth is on once a token exists (hpcai500d token create) or with\n"
    "--token-file (one shared token of full trust); without auth or TLS\n"
    "hpcai500d listens on loopback only unless --insecure. --http-public\n"
    "serves the read-only pages and API without a token.\n"
    "defaults: --grpc 127.0.0.1:7500 --http 127.0.0.1:7580 "
    "--db ./hpcai500.db --node-timeout-s 60\n"
    "          --http-max-connections 256 (more are answered 503),\n"
    "          --http-max-connections-per-client 32 (of those, from one\n"
    "          address; a request must arrive within 10 s)\n"
    "--tls-cert/--tls-key (PEM): gRPC and HTTP over TLS only; with\n"
    "--tls-client-ca, agents must present a certificate it signed that names\n"
    "their --name (the CLI needs none)\n"
    "--change-webhook: POST each new change point in a bad direction there\n"
    "as JSON, retried with back-off (docs/design.md, \"Change points\")\n"
    "--queues: the queues (partitions) in YAML (docs/design.md, \"Queues\");\n"
    "without it one queue, default, over every node\n"
    "--heartbeat-interval-s: how often agents beat (told to them when they\n"
    "register), at most a third of --node-timeout-s; default 5 s, or a\n"
    "third of the timeout when that is shorter\n"
    "--max-queued-per-user: queued runs one user may have, 0 for no cap\n"
    "(default 1000)\n"
    "--max-agent-streams: agents connected at once, one per node (default\n"
    "10000); one more is refused until another leaves\n"
    "--node-retention-hours: a node down (disconnected, or its agent left)\n"
    "and running nothing is forgotten after this long without word from its\n"
    "agent, unless drained; 0 keeps nodes for ever (default 24)\n"
    "--max-throughput-cv, --max-epochs-cv: the leaderboard marks a\n"
    "submission unrepeatable when the coefficient of variation of its\n"
    "repetitions' throughput or epochs to target is above this percent\n"
    "(defaults 2 and 10)\n"
    "--grpc-idle-timeout-s: a gRPC connection with no call open for this\n"
    "long is closed (default 300; a client reconnects on its next call, an\n"
    "agent's stream is a call)\n"
    "--ignore-sigterm: only SIGINT stops it (in a Slurm batch step, where\n"
    "scancel and the time limit send SIGTERM to every process of the job\n"
    "at once, the job script records the cancel first, then stops it)\n"
    "--outlier-z, --outlier-min-change: node health's outlier rule: a\n"
    "pre-flight figure or a rank's time flags its node when its robust\n"
    "z-score (median and MAD) passes Z on the bad side and it is at least\n"
    "PCT percent off the median (defaults 3.5 and 20); --drain-on-flag also\n"
    "drains a flagged node, the evidence its reason\n"
    "--preflight-budget-ms: the measuring time of one node's pre-flight\n"
    "(default 4000); --preflight-timeout-s: its agent kills it after this\n"
    "(default 20)\n"
    "exit codes: 0 stopped by SIGTERM or SIGINT, 1 it could not start or\n"
    "serve (the database in use or unreadable, a port taken, a --queues or\n"
    "TLS file refused), 2 a bad command line\n";

std::string DefaultWebDir() { return HPCAI500_DEFAULT_WEB_DIR; }

namespace {

// `text` as an integer in [min, max] into *value; else InvalidArgument
// "flag FLAG: must be RANGE, got 'TEXT'".
absl::Status ParseBoundedInt(absl::string_view flag, const std::string& text,
                             int min, int max, absl::string_view range,
                             int* value) {
  if (text.empty()) return absl::OkStatus();
  if (!absl::SimpleAtoi(text, value) || *value < min || *value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag ", flag, ": must be ", range, ", got '", text, "'"));
  }
  return absl::OkStatus();
}

// `text` as a percent in [0, 100] into *fraction (2 -> 0.02); else
// InvalidArgument as ParseBoundedInt.
absl::Status ParsePercent(absl::string_view flag, const std::string& text,
                          double* fraction) {
  if (text.empty()) return absl::OkStatus();
  double percent = 0;
  if (!absl::SimpleAtod(text, &percent) || !(percent >= 0 && percent <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flag ", flag, ": must be a percent from 0 to 100, got '", text, "'"));
  }
  *fraction = percent / 100;
  return absl::OkStatus();
}

// Node health's flags into *o (those given; the rest keep their defaults).
absl::Status ParseNodeHealth(const std::string& z, const std::string& change,
                             const std::string& budget,
                             const std::string& timeout, NodeHealthOptions* o) {
  if (!z.empty() &&
      (!absl::SimpleAtod(z, &o->rule.z_threshold) ||
       !(o->rule.z_threshold >= 1 && o->rule.z_threshold <= 100))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --outlier-z: must be a number from 1 to 100, got '", z, "'"));
  }
  RETURN_IF_ERROR(ParsePercent("--outlier-min-change", change,
                               &o->rule.min_relative_change));
  int budget_ms = static_cast<int>(o->preflight_budget_ms);
  int timeout_s = static_cast<int>(o->preflight_timeout_ms / 1000);
  RETURN_IF_ERROR(ParseBoundedInt("--preflight-budget-ms", budget, 100, 60'000,
                                  "100..60000 ms", &budget_ms));
  RETURN_IF_ERROR(ParseBoundedInt("--preflight-timeout-s", timeout, 1, 120,
                                  "1..120 seconds", &timeout_s));
  if (int64_t{timeout_s} * 1000 <= budget_ms) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --preflight-timeout-s: ", timeout_s,
                     " s leaves no time beyond --preflight-budget-ms ",
                     budget_ms, " for the worker to start"));
  }
  o->preflight_budget_ms = budget_ms;
  o->preflight_timeout_ms = int64_t{timeout_s} * 1000;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ServerOptions> ParseServerOptions(
    const std::vector<std::string>& args) {
  ServerOptions flags;
  std::string node_timeout, max_connections, heartbeat_interval, max_queued,
      node_retention, max_agent_streams, max_per_client, max_throughput_cv,
      max_epochs_cv, grpc_idle_timeout, outlier_z, outlier_min_change,
      preflight_budget, preflight_timeout;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500d");
  AddValueFlag(*app, "grpc", &flags.grpc);
  AddValueFlag(*app, "http", &flags.http);
  AddValueFlag(*app, "db", &flags.db);
  AddValueFlag(*app, "web-dir", &flags.web_dir);
  AddValueFlag(*app, "token-file", &flags.token_file);
  AddValueFlag(*app, "queues", &flags.queues);
  AddValueFlag(*app, "change-webhook", &flags.change_webhook);
  AddValueFlag(*app, "node-timeout-s", &node_timeout);
  AddValueFlag(*app, "http-max-connections", &max_connections);
  AddValueFlag(*app, "heartbeat-interval-s", &heartbeat_interval);
  AddValueFlag(*app, "max-queued-per-user", &max_queued);
  AddValueFlag(*app, "node-retention-hours", &node_retention);
  AddValueFlag(*app, "max-agent-streams", &max_agent_streams);
  AddValueFlag(*app, "http-max-connections-per-client", &max_per_client);
  AddValueFlag(*app, "max-throughput-cv", &max_throughput_cv);
  AddValueFlag(*app, "max-epochs-cv", &max_epochs_cv);
  AddValueFlag(*app, "grpc-idle-timeout-s", &grpc_idle_timeout);
  AddValueFlag(*app, "outlier-z", &outlier_z);
  AddValueFlag(*app, "outlier-min-change", &outlier_min_change);
  AddValueFlag(*app, "preflight-budget-ms", &preflight_budget);
  AddValueFlag(*app, "preflight-timeout-s", &preflight_timeout);
  AddSwitch(*app, "drain-on-flag", &flags.node_health.drain_on_flag);
  AddSwitch(*app, "http-public", &flags.http_public);
  AddSwitch(*app, "insecure", &flags.insecure);
  AddSwitch(*app, "ignore-sigterm", &flags.ignore_sigterm);
  AddServerTlsFlags(*app, &flags.tls);
  AddSwitch(*app, "help,h", &flags.help);
  RETURN_IF_ERROR(ParseFlags(*app, args));
  // One rule for both ports: gRPC would take 99999 as 34463, 65536 as any.
  for (const auto& [flag, address] :
       {std::pair<const char*, const std::string&>{"--grpc", flags.grpc},
        {"--http", flags.http}}) {
    if (absl::StatusOr<HostPort> parsed = ParseHostPort(address);
        !parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", flag, ": ", parsed.status().message()));
    }
  }
  RETURN_IF_ERROR(ParseBoundedInt("--node-timeout-s", node_timeout, 1, 86400,
                                  "1..86400 seconds", &flags.node_timeout_s));
  RETURN_IF_ERROR(ParseBoundedInt("--http-max-connections", max_connections, 1,
                                  65536, "1..65536",
                                  &flags.http_max_connections));
  RETURN_IF_ERROR(ParseBoundedInt("--heartbeat-interval-s", heartbeat_interval,
                                  1, 3600, "1..3600 seconds",
                                  &flags.heartbeat_interval_s));
  RETURN_IF_ERROR(ParseBoundedInt("--max-queued-per-user", max_queued, 0,
                                  10'000'000, "0 (no cap)..10000000",
                                  &flags.max_queued_per_user));
  RETURN_IF_ERROR(ParseBoundedInt("--http-max-connections-per-client",
                                  max_per_client, 1, 65536, "1..65536",
                                  &flags.http_max_connections_per_client));
  RETURN_IF_ERROR(ParseBoundedInt("--max-agent-streams", max_agent_streams, 1,
                                  1'000'000, "1..1000000",
                                  &flags.max_agent_streams));
  RETURN_IF_ERROR(ParseBoundedInt("--node-retention-hours", node_retention, 0,
                                  87'600, "0 (keep for ever)..87600 hours",
                                  &flags.node_retention_hours));
  RETURN_IF_ERROR(ParseBoundedInt("--grpc-idle-timeout-s", grpc_idle_timeout, 1,
                                  86400, "1..86400 seconds",
                                  &flags.grpc_idle_timeout_s));
  RETURN_IF_ERROR(ParsePercent("--max-throughput-cv", max_throughput_cv,
                               &flags.spread.throughput_cv));
  RETURN_IF_ERROR(ParsePercent("--max-epochs-cv", max_epochs_cv,
                               &flags.spread.epochs_to_target_cv));
  RETURN_IF_ERROR(ParseNodeHealth(outlier_z, outlier_min_change,
                                  preflight_budget, preflight_timeout,
                                  &flags.node_health));
  // Refused here, before anything is opened, with the usage text.
  RETURN_IF_ERROR(
      HeartbeatIntervalMs(int64_t{flags.node_timeout_s} * 1000,
                          int64_t{flags.heartbeat_interval_s} * 1000)
          .status());
  return flags;
}

absl::StatusOr<CoordinatorOptions> CoordinatorOptionsFrom(
    const ServerOptions& flags) {
  CoordinatorOptions options;
  options.node_timeout_ms = int64_t{flags.node_timeout_s} * 1000;
  options.node_retention_ms = int64_t{flags.node_retention_hours} * 3600 * 1000;
  options.node_health = flags.node_health;
  ASSIGN_OR_RETURN(
      options.heartbeat_interval_ms,
      HeartbeatIntervalMs(options.node_timeout_ms,
                          int64_t{flags.heartbeat_interval_s} * 1000));
  if (!flags.queues.empty()) {
    ASSIGN_OR_RETURN(const std::string text,
                     ReadFlagFile("--queues", flags.queues, 1 << 20));
    absl::StatusOr<std::vector<Scheduler::Queue>> queues = ParseQueues(text);
    if (!queues.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--queues ", flags.queues, ": ", queues.status().message()));
    }
    options.queues = *std::move(queues);
  }
  return options;
}

bool IsLoopback(const std::string& host_port) {
  const std::string host = host_port.substr(0, host_port.rfind(':'));
  return host == "localhost" || host == "[::1]" ||
         absl::StartsWith(host, "127.");
}

absl::Status CheckExposure(const ServerOptions& flags, bool auth, bool tls) {
  if (auth || tls || flags.insecure ||
      (IsLoopback(flags.grpc) && IsLoopback(flags.http))) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "no API token exists, no --token-file and no TLS is given, so "
      "anybody who reaches --grpc ",
      flags.grpc, " or --http ", flags.http,
      " could run and cancel anything: create one (hpcai500d token create "
      "--role admin --user NAME), bind loopback, or pass --insecure"));
}

}  // namespace hpcai500
