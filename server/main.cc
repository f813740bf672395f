// hpcai500d: the coordinator. Parses its flags (server/options.h), builds
// the store, the coordinator with its read side, access control and the
// servers, and serves until SIGTERM (unless --ignore-sigterm) or SIGINT.
// `hpcai500d token` and `hpcai500d backup` are commands of their own.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/printable.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "common/token.h"
#include "common/version.h"
#include "server/auth/access_control.h"
#include "server/auth/auth.h"
#include "server/auth/grpc_log.h"
#include "server/auth/tls.h"
#include "server/auth/tls_failures.h"
#include "server/auth/token_command.h"
#include "server/coordinator/coordinator.h"
#include "server/coordinator/run_reads.h"
#include "server/grpc_services.h"
#include "server/http/http_server.h"
#include "server/options.h"
#include "server/store/backup_command.h"
#include "server/store/store.h"

namespace hpcai500 {
namespace {

// "127.0.0.1:0" with port 7501 -> "127.0.0.1:7501".
std::string WithPort(const std::string& host_port, int port) {
  size_t colon = host_port.rfind(':');
  return absl::StrCat(host_port.substr(0, colon), ":", port);
}

// The start-up line that says how this hpcai500d is set up.
std::string SetupLine(const ServerOptions& flags,
                      const CoordinatorOptions& options, bool auth,
                      bool shared_token) {
  return absl::StrCat(
      "store ", flags.db, ", auth ",
      auth
          ? (shared_token ? "on (shared token, API tokens)" : "on (API tokens)")
          : "off (loopback only: create a token to turn it on)",
      flags.http_public ? ", HTTP read-only open to all" : "",
      ", node timeout ", flags.node_timeout_s, " s, heartbeat ",
      options.heartbeat_interval_ms / 1000.0, " s, node retention ",
      flags.node_retention_hours > 0
          ? absl::StrCat(flags.node_retention_hours, " h")
          : std::string("for ever"));
}

absl::Status RunServer(const ServerOptions& flags) {
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

  // Before the database is opened (or made): a start refused for a port
  // that another process holds creates no file.
  for (const auto& [flag, address] :
       {std::pair<const char*, const std::string&>{"--grpc", flags.grpc},
        {"--http", flags.http}}) {
    ASSIGN_OR_RETURN(const HostPort parsed, ParseHostPort(address));
    if (absl::Status free = CheckCanListen(parsed); !free.ok()) {
      return absl::UnavailableError(
          absl::StrCat(flag, " ", address, ": ", free.message()));
    }
  }
  std::string token;
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadTokenFile("--token-file", flags.token_file));
  }
  ASSIGN_OR_RETURN(const TlsFiles tls, LoadServerTlsFiles(flags.tls));
  ASSIGN_OR_RETURN(const CoordinatorOptions options,
                   CoordinatorOptionsFrom(flags));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(flags.db));
  RealClock clock;
  ASSIGN_OR_RETURN(
      std::unique_ptr<Coordinator> coordinator,
      Coordinator::Create(store.get(), &clock, &Registry::Builtin(), options));

  ASSIGN_OR_RETURN(TokenAuthenticator tokens,
                   TokenAuthenticator::Open(
                       store.get(), TokenAuthenticator::KeyPathFor(flags.db)));
  AccessLimits limits;
  limits.max_queued_runs_per_user = flags.max_queued_per_user;
  limits.max_agent_streams = flags.max_agent_streams;
  AccessControl access(store.get(), &clock, std::move(tokens), token, limits);
  const bool auth = access.enabled();
  RETURN_IF_ERROR(CheckExposure(flags, auth, !tls.cert_pem.empty()));
  if (!auth && flags.insecure) {
    LogWarning(
        "--insecure: auth is off and hpcai500d listens beyond "
        "loopback; every caller is an admin");
  }
  // Declared before the servers: it outlives every handshake they make.
  TlsFailureAudit tls_failures(&access, &clock);
  std::optional<GrpcLogRoute> grpc_log;
  if (!tls.cert_pem.empty()) grpc_log.emplace(&tls_failures);
  RunReads reads(
      store.get(), &Registry::Builtin(), coordinator.get(),
      flags.http_public
          ? RunReads::ReadRule()
          : [&access](absl::string_view
                          bearer) { return access.AuthorizeRead(bearer); },
      [&tls_failures] { return tls_failures.MetricsText(); }, flags.spread);
  ClientServiceImpl client_service(coordinator.get(), &reads, &access);
  AgentServiceImpl agent_service(
      coordinator.get(), &access,
      /*check_agent_certificates=*/!tls.ca_pem.empty());
  int grpc_port = 0;
  std::unique_ptr<grpc::Server> server = StartCoordinatorServer(
      flags.grpc, CoordinatorServerCredentials(tls), &client_service,
      &agent_service, &access, &grpc_port, flags.grpc_idle_timeout_s);
  if (server == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--grpc ", flags.grpc, ": cannot listen there"));
  }
  LogInfo(absl::StrCat("grpc listening on ", WithPort(flags.grpc, grpc_port)));
  LogInfo(DescribeServerTls(tls));

  HttpServer http(&reads, flags.web_dir, /*threads=*/2,
                  flags.http_max_connections,
                  flags.http_max_connections_per_client);
  absl::Status started =
      tls.cert_pem.empty()
          ? absl::OkStatus()
          : http.UseTls(tls.cert_pem, tls.key_pem,
                        [&tls_failures](const std::string& peer,
                                        const std::string& reason) {
                          tls_failures.Record(kHttpsPort, peer, reason);
                        });
  if (started.ok()) started = http.Start(flags.http);
  if (!started.ok()) {
    server->Shutdown();
    return started;
  }
  LogInfo(absl::StrCat(tls.cert_pem.empty() ? "http" : "https",
                       " listening on ", WithPort(flags.http, http.port())));
  LogInfo(SetupLine(flags, options, auth, !token.empty()));

  std::atomic<bool> stopping{false};
  std::thread ticker([&] {
    while (!stopping.load()) {
      coordinator->Tick();
      tls_failures.Flush();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  LogInfo(absl::StrCat("signal ", signal_number, ": shutting down"));
  stopping.store(true);
  coordinator->Shutdown();
  http.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  ticker.join();
  LogInfo("stopped");
  return absl::OkStatus();
}

}  // namespace
}  // namespace hpcai500

int main(int argc, char** argv) {
  if (hpcai500::PrintVersionIfAsked("hpcai500d", argc, argv, std::cout)) {
    return 0;
  }
  // Debian's abseil checks every lock for deadlock cycles (a few per cent
  // of hpcai500d's CPU at 1,000 agents); the tests, not production, look
  // for them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "backup") {
    return hpcai500::RunBackupCommand({args.begin() + 1, args.end()}, std::cout,
                                      std::cerr);
  }
  if (!args.empty() && args[0] == "token") {
    hpcai500::RealClock clock;
    return hpcai500::RunTokenCommand({args.begin() + 1, args.end()}, clock,
                                     std::cout, std::cerr);
  }
  absl::StatusOr<hpcai500::ServerOptions> flags =
      hpcai500::ParseServerOptions(args);
  if (!flags.ok()) {
    // The message may echo a flag's value: printed escaped.
    std::cerr << "hpcai500d: "
              << hpcai500::EscapeLine(std::string(flags.status().message()))
              << "\n"
              << hpcai500::kServerUsage;
    return 2;
  }
  if (flags->help) {
    std::cout << hpcai500::kServerUsage;
    return 0;
  }
  absl::Status status = hpcai500::RunServer(*flags);
  if (!status.ok()) {
    std::cerr << "hpcai500d: "
              << hpcai500::EscapeLine(std::string(status.message())) << "\n";
    return 1;
  }
  return 0;
}
