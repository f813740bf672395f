// hpcai500d: the coordinator. Parses flags, opens the store, and serves the
// gRPC services and the HTTP front end until SIGTERM (unless --ignore-sigterm)
// or SIGINT.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/flag_file.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "common/tls_files.h"
#include "common/token.h"
#include "server/access_control.h"
#include "server/auth.h"
#include "server/backup_command.h"
#include "server/coordinator.h"
#include "server/grpc_services.h"
#include "server/node_timing.h"
#include "server/queues.h"
#include "server/store.h"
#include "server/tls.h"
#include "server/token_command.h"
#ifdef HPCAI500_HAVE_HTTP
#include "server/http/http_server.h"
#endif

namespace hpcai500 {
namespace {

constexpr char kUsage[] =
    "usage: hpcai500d [--grpc HOST:PORT] [--http HOST:PORT] [--db FILE]\n"
    "                 [--web-dir DIR] [--token-file FILE] "
    "[--node-timeout-s N]\n"
    "                 [--http-max-connections N] [--http-public] "
    "[--insecure]\n"
    "                 [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
    "                 [--queues FILE] [--heartbeat-interval-s N]\n"
    "                 [--max-queued-per-user N] [--node-retention-hours N]\n"
    "                 [--ignore-sigterm]\n"
    "       hpcai500d token create|list|revoke ... (hpcai500d token --help)\n"
    "       hpcai500d backup --db FILE --out FILE (while it runs, too)\n"
    "auth is on once a token exists (hpcai500d token create) or with\n"
    "--token-file (one shared token of full trust); without auth or TLS\n"
    "hpcai500d listens on loopback only unless --insecure. --http-public\n"
    "serves the read-only pages and API without a token.\n"
    "defaults: --grpc 127.0.0.1:7500 --http 127.0.0.1:7580 "
    "--db ./hpcai500.db --node-timeout-s 60\n"
    "          --http-max-connections 256 (more are answered 503)\n"
    "--tls-cert/--tls-key (PEM): gRPC and HTTP over TLS only; with\n"
    "--tls-client-ca, agents must present a certificate it signed that names\n"
    "their --name (the CLI needs none)\n"
    "--queues: the queues (partitions) in YAML (docs/design.md, \"Queues\");\n"
    "without it one queue, default, over every node\n"
    "--heartbeat-interval-s: how often agents beat (told to them when they\n"
    "register), at most a third of --node-timeout-s; default 5 s, or a\n"
    "third of the timeout when that is shorter\n"
    "--max-queued-per-user: queued runs one user may have, 0 for no cap\n"
    "(default 1000)\n"
    "--node-retention-hours: a node down (disconnected, or its agent left)\n"
    "and running nothing is forgotten after this long without word from its\n"
    "agent, unless drained; 0 keeps nodes for ever (default 24)\n"
    "--ignore-sigterm: only SIGINT stops it (in a Slurm batch step, where\n"
    "scancel and the time limit send SIGTERM to every process of the job\n"
    "at once, the job script records the cancel first, then stops it)\n";

struct Flags {
  std::string grpc = "127.0.0.1:7500";
  std::string http = "127.0.0.1:7580";
  std::string db = "./hpcai500.db";
  std::string web_dir = HPCAI500_DEFAULT_WEB_DIR;
  std::string token_file;
  std::string queues;
  int node_timeout_s = 60;
  int heartbeat_interval_s = 0;  // 0: HeartbeatIntervalMs's default
  int max_queued_per_user = AccessLimits{}.max_queued_runs_per_user;
  int node_retention_hours = 24;
  int http_max_connections = HttpServer::kDefaultMaxConnections;
  bool http_public = false;
  bool insecure = false;
  bool ignore_sigterm = false;
  TlsFileFlags tls;
  bool help = false;
};

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

// The command line (without argv[0]) by the rules of common/flags.h.
absl::StatusOr<Flags> ParseServerFlags(const std::vector<std::string>& args) {
  Flags flags;
  std::string node_timeout, max_connections, heartbeat_interval, max_queued,
      node_retention;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500d");
  AddValueFlag(*app, "grpc", &flags.grpc);
  AddValueFlag(*app, "http", &flags.http);
  AddValueFlag(*app, "db", &flags.db);
  AddValueFlag(*app, "web-dir", &flags.web_dir);
  AddValueFlag(*app, "token-file", &flags.token_file);
  AddValueFlag(*app, "queues", &flags.queues);
  AddValueFlag(*app, "node-timeout-s", &node_timeout);
  AddValueFlag(*app, "http-max-connections", &max_connections);
  AddValueFlag(*app, "heartbeat-interval-s", &heartbeat_interval);
  AddValueFlag(*app, "max-queued-per-user", &max_queued);
  AddValueFlag(*app, "node-retention-hours", &node_retention);
  AddSwitch(*app, "http-public", &flags.http_public);
  AddSwitch(*app, "insecure", &flags.insecure);
  AddSwitch(*app, "ignore-sigterm", &flags.ignore_sigterm);
  AddServerTlsFlags(*app, &flags.tls);
  AddSwitch(*app, "help,h", &flags.help);
  RETURN_IF_ERROR(ParseFlags(*app, args));
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
  RETURN_IF_ERROR(ParseBoundedInt("--node-retention-hours", node_retention, 0,
                                  87'600, "0 (keep for ever)..87600 hours",
                                  &flags.node_retention_hours));
  // Refused here, before anything is opened, with the usage text.
  RETURN_IF_ERROR(
      HeartbeatIntervalMs(int64_t{flags.node_timeout_s} * 1000,
                          int64_t{flags.heartbeat_interval_s} * 1000)
          .status());
  return flags;
}

// Whether "HOST:PORT" listens on loopback only.
bool IsLoopback(const std::string& host_port) {
  const std::string host = host_port.substr(0, host_port.rfind(':'));
  return host == "localhost" || host == "[::1]" ||
         absl::StartsWith(host, "127.");
}

// The HTTP front end's view: the coordinator, read only by callers that
// AccessControl lets read (everyone with --http-public).
class GuardedView final : public CoordinatorView {
 public:
  GuardedView(Coordinator* coordinator, AccessControl* access, bool open)
      : coordinator_(coordinator), access_(access), open_(open) {}
  absl::StatusOr<v1::Run> GetRun(int64_t run_id) override {
    return coordinator_->GetRun(run_id);
  }
  absl::StatusOr<v1::ListRunsResponse> ListRuns(
      const v1::ListRunsRequest& request) override {
    return coordinator_->ListRuns(request);
  }
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request) override {
    return coordinator_->Leaderboard(request);
  }
  absl::StatusOr<v1::ListNodesResponse> ListNodes() override {
    return coordinator_->ListNodes();
  }
  absl::StatusOr<v1::RunRanksResponse> RunRanks(int64_t run_id) override {
    return coordinator_->RunRanks(run_id);
  }
  absl::StatusOr<std::string> RankLogText(int64_t run_id, int32_t attempt,
                                          int32_t rank, RankLog log) override {
    return coordinator_->RankLogText(run_id, attempt, rank, log);
  }
  std::string MetricsText() override { return coordinator_->MetricsText(); }
  absl::Status AuthorizeRead(absl::string_view bearer) override {
    if (open_) return absl::OkStatus();
    absl::StatusOr<Principal> who = access_->Authenticate(bearer);
    if (!who.ok()) return who.status();
    if (!Allows(who->role, Action::kRead)) {
      return absl::PermissionDeniedError(
          absl::StrCat("role ", RoleName(who->role), " may not read"));
    }
    return absl::OkStatus();
  }

 private:
  Coordinator* const coordinator_;
  AccessControl* const access_;
  const bool open_;
};

// "127.0.0.1:0" with port 7501 -> "127.0.0.1:7501".
std::string WithPort(const std::string& host_port, int port) {
  size_t colon = host_port.rfind(':');
  return absl::StrCat(host_port.substr(0, colon), ":", port);
}

absl::Status RunServer(const Flags& flags) {
  SetLogIdentity("hpcai500d", /*context=*/"");
  // Block the stop signals in every thread; this one waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  if (flags.ignore_sigterm) {
    signal(SIGTERM, SIG_IGN);
  } else {
    sigaddset(&stop_signals, SIGTERM);
  }
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string token;
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadTokenFile("--token-file", flags.token_file));
  }
  ASSIGN_OR_RETURN(const TlsFiles tls, LoadServerTlsFiles(flags.tls));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(flags.db));
  RealClock clock;
  CoordinatorOptions options;
  options.node_timeout_ms = int64_t{flags.node_timeout_s} * 1000;
  options.node_retention_ms = int64_t{flags.node_retention_hours} * 3600 * 1000;
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
  ASSIGN_OR_RETURN(
      std::unique_ptr<Coordinator> coordinator,
      Coordinator::Create(store.get(), &clock, &Registry::Builtin(), options));

  ASSIGN_OR_RETURN(TokenAuthenticator tokens,
                   TokenAuthenticator::Open(
                       store.get(), TokenAuthenticator::KeyPathFor(flags.db)));
  AccessLimits limits;
  limits.max_queued_runs_per_user = flags.max_queued_per_user;
  AccessControl access(store.get(), &clock, std::move(tokens), token, limits);
  const bool auth = access.enabled();
  if (!auth && tls.cert_pem.empty() && !flags.insecure &&
      (!IsLoopback(flags.grpc) || !IsLoopback(flags.http))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no API token exists, no --token-file and no TLS is given, so "
        "anybody who reaches --grpc ",
        flags.grpc, " or --http ", flags.http,
        " could run and cancel anything: create one (hpcai500d token create "
        "--role admin --user NAME), bind loopback, or pass --insecure"));
  }
  if (!auth && flags.insecure) {
    LogWarning(
        "--insecure: auth is off and hpcai500d listens beyond "
        "loopback; every caller is an admin");
  }
  ClientServiceImpl client_service(coordinator.get(), &access);
  AgentServiceImpl agent_service(
      coordinator.get(), &access,
      /*check_agent_certificates=*/!tls.ca_pem.empty());
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(flags.grpc, CoordinatorServerCredentials(tls),
                           &grpc_port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // one per port
  // Keepalive pings find a silent agent (a stopped process, a cut link)
  // whose TCP connection still looks open; agents ping us as often.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.RegisterService(&client_service);
  builder.RegisterService(&agent_service);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(&access));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || grpc_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--grpc ", flags.grpc, ": cannot listen there"));
  }
  LogInfo(absl::StrCat("grpc listening on ", WithPort(flags.grpc, grpc_port)));
  LogInfo(DescribeServerTls(tls));

#ifdef HPCAI500_HAVE_HTTP
  GuardedView guarded(coordinator.get(), &access, flags.http_public);
  HttpServer http(&guarded, flags.web_dir, /*threads=*/2,
                  flags.http_max_connections);
  absl::Status started = tls.cert_pem.empty()
                             ? absl::OkStatus()
                             : http.UseTls(tls.cert_pem, tls.key_pem);
  if (started.ok()) started = http.Start(flags.http);
  if (!started.ok()) {
    server->Shutdown();
    return started;
  }
  LogInfo(absl::StrCat(tls.cert_pem.empty() ? "http" : "https",
                       " listening on ", WithPort(flags.http, http.port())));
#endif
  LogInfo(absl::StrCat(
      "store ", flags.db, ", auth ",
      auth ? (token.empty() ? "on (API tokens)"
                            : "on (shared token, API "
                              "tokens)")
           : "off (loopback only: create a token to turn it on)",
      flags.http_public ? ", HTTP read-only open to all" : "",
      ", node timeout ", flags.node_timeout_s, " s, heartbeat ",
      options.heartbeat_interval_ms / 1000.0, " s, node retention ",
      flags.node_retention_hours > 0
          ? absl::StrCat(flags.node_retention_hours, " h")
          : std::string("for ever")));

  std::atomic<bool> stopping{false};
  std::thread ticker([&] {
    while (!stopping.load()) {
      coordinator->Tick();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  LogInfo(absl::StrCat("signal ", signal_number, ": shutting down"));
  stopping.store(true);
  coordinator->Shutdown();
#ifdef HPCAI500_HAVE_HTTP
  http.Stop();
#endif
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  ticker.join();
  LogInfo("stopped");
  return absl::OkStatus();
}

}  // namespace
}  // namespace hpcai500

int main(int argc, char** argv) {
  // Debian's abseil checks every lock for deadlock cycles (a few per cent
  // of hpcai500d's CPU at 1,000 agents); the tests, not production, look
  // for them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc > 1 && std::string(argv[1]) == "backup") {
    return hpcai500::RunBackupCommand(
        std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
  }
  if (argc > 1 && std::string(argv[1]) == "token") {
    hpcai500::RealClock clock;
    return hpcai500::RunTokenCommand(
        std::vector<std::string>(argv + 2, argv + argc), clock, std::cout,
        std::cerr);
  }
  absl::StatusOr<hpcai500::Flags> flags = hpcai500::ParseServerFlags(
      std::vector<std::string>(argv + 1, argv + argc));
  if (!flags.ok()) {
    std::cerr << "hpcai500d: " << flags.status().message() << "\n"
              << hpcai500::kUsage;
    return 2;
  }
  if (flags->help) {
    std::cout << hpcai500::kUsage;
    return 0;
  }
  absl::Status status = hpcai500::RunServer(*flags);
  if (!status.ok()) {
    std::cerr << "hpcai500d: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
