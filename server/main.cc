// hpcai500d: the coordinator. Parses flags, opens the store, and serves the
// gRPC services and the HTTP front end until SIGTERM or SIGINT.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/registry.h"
#include "common/status_macros.h"
#include "server/coordinator.h"
#include "server/grpc_services.h"
#include "server/store.h"
#ifdef HPCAI500_HAVE_HTTP
#include "server/http/http_server.h"
#endif

namespace hpcai500 {
namespace {

constexpr char kUsage[] =
    "usage: hpcai500d [--grpc HOST:PORT] [--http HOST:PORT] [--db FILE]\n"
    "                 [--web-dir DIR] [--auth-token-file FILE] "
    "[--node-timeout-s N]\n"
    "                 [--http-max-connections N]\n"
    "defaults: --grpc 127.0.0.1:7500 --http 127.0.0.1:7580 "
    "--db ./hpcai500.db --node-timeout-s 60\n"
    "          --http-max-connections 256 (more are answered 503)\n";

struct Flags {
  std::string grpc = "127.0.0.1:7500";
  std::string http = "127.0.0.1:7580";
  std::string db = "./hpcai500.db";
  std::string web_dir = HPCAI500_DEFAULT_WEB_DIR;
  std::string auth_token_file;
  int node_timeout_s = 60;
  int http_max_connections = HttpServer::kDefaultMaxConnections;
  bool help = false;
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      flags.help = true;
      continue;
    }
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    std::string* target = nullptr;
    if (name == "--grpc") target = &flags.grpc;
    if (name == "--http") target = &flags.http;
    if (name == "--db") target = &flags.db;
    if (name == "--web-dir") target = &flags.web_dir;
    if (name == "--auth-token-file") target = &flags.auth_token_file;
    std::string timeout;
    if (name == "--node-timeout-s") target = &timeout;
    std::string max_connections;
    if (name == "--http-max-connections") target = &max_connections;
    if (target == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument '", arg, "'"));
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag ", name, " needs a value"));
      }
      value = argv[++i];
    }
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", name, ": empty value"));
    }
    *target = value;
    if (target == &timeout &&
        (!absl::SimpleAtoi(timeout, &flags.node_timeout_s) ||
         flags.node_timeout_s < 1 || flags.node_timeout_s > 86400)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --node-timeout-s: must be 1..86400 seconds, got '",
                       timeout, "'"));
    }
    if (target == &max_connections &&
        (!absl::SimpleAtoi(max_connections, &flags.http_max_connections) ||
         flags.http_max_connections < 1 ||
         flags.http_max_connections > 65536)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --http-max-connections: must be 1..65536, got '",
                       max_connections, "'"));
    }
  }
  return flags;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--auth-token-file ", path, ": cannot read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": empty"));
  }
  return token;
}

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
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string token;
  if (!flags.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadToken(flags.auth_token_file));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(flags.db));
  RealClock clock;
  CoordinatorOptions options;
  options.node_timeout_ms = int64_t{flags.node_timeout_s} * 1000;
  ASSIGN_OR_RETURN(
      std::unique_ptr<Coordinator> coordinator,
      Coordinator::Create(store.get(), &clock, &Registry::Builtin(), options));

  ClientServiceImpl client_service(coordinator.get());
  AgentServiceImpl agent_service(coordinator.get());
  grpc::ServerBuilder builder;
  int grpc_port = 0;
  builder.AddListeningPort(flags.grpc, grpc::InsecureServerCredentials(),
                           &grpc_port);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  builder.RegisterService(&client_service);
  builder.RegisterService(&agent_service);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::make_unique<AuthInterceptorFactory>(token));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || grpc_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--grpc ", flags.grpc, ": cannot listen there"));
  }
  LogInfo(absl::StrCat("grpc listening on ", WithPort(flags.grpc, grpc_port)));

#ifdef HPCAI500_HAVE_HTTP
  HttpServer http(coordinator.get(), flags.web_dir, /*threads=*/2,
                  flags.http_max_connections);
  if (absl::Status started = http.Start(flags.http); !started.ok()) {
    server->Shutdown();
    return started;
  }
  LogInfo(
      absl::StrCat("http listening on ", WithPort(flags.http, http.port())));
#endif
  LogInfo(absl::StrCat("store ", flags.db, ", auth ",
                       token.empty() ? "off" : "bearer token",
                       ", node timeout ", flags.node_timeout_s, " s"));

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
  absl::StatusOr<hpcai500::Flags> flags = hpcai500::ParseFlags(argc, argv);
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
