// hpcai500d's parts, built and stopped in order: see daemon.h.
#include "server/daemon.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/token.h"
#include "methodology/registry.h"
#include "server/auth/auth.h"
#include "server/auth/site_key_command.h"
#include "server/auth/tls.h"

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

// Unavailable naming the flag when `address` cannot be listened on now.
absl::Status CheckCanListenOn(const char* flag, const std::string& address) {
  ASSIGN_OR_RETURN(const HostPort parsed, ParseHostPort(address));
  if (absl::Status free = CheckCanListen(parsed); !free.ok()) {
    return absl::UnavailableError(
        absl::StrCat(flag, " ", address, ": ", free.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    const ServerOptions& flags) {
  std::unique_ptr<Daemon> daemon(new Daemon());
  RETURN_IF_ERROR(daemon->Build(flags));
  return daemon;
}

Daemon::~Daemon() { Stop(); }

absl::Status Daemon::Build(const ServerOptions& flags) {
  RETURN_IF_ERROR(CheckCanListenOn("--grpc", flags.grpc));
  RETURN_IF_ERROR(CheckCanListenOn("--http", flags.http));
  std::string token;
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(token, ReadTokenFile("--token-file", flags.token_file));
  }
  ASSIGN_OR_RETURN(const TlsFiles tls, LoadServerTlsFiles(flags.tls));
  ASSIGN_OR_RETURN(CoordinatorOptions options, CoordinatorOptionsFrom(flags));
  if (!flags.change_webhook.empty()) {
    WebhookOptions webhook;
    webhook.url = flags.change_webhook;
    ASSIGN_OR_RETURN(change_webhook_, ChangeWebhook::Create(webhook));
    ChangeWebhook* notify = change_webhook_.get();
    options.on_regression = [notify](const v1::ChangePoint& change) {
      notify->Notify(change);
    };
  }
  ASSIGN_OR_RETURN(store_, Store::Open(flags.db));
  ASSIGN_OR_RETURN(coordinator_,
                   Coordinator::Create(store_.get(), &clock_,
                                       &Registry::Builtin(), options));

  ASSIGN_OR_RETURN(TokenAuthenticator tokens,
                   TokenAuthenticator::Open(
                       store_.get(), TokenAuthenticator::KeyPathFor(flags.db)));
  AccessLimits limits;
  limits.max_queued_runs_per_user = flags.max_queued_per_user;
  limits.max_agent_streams = flags.max_agent_streams;
  access_ = std::make_unique<AccessControl>(store_.get(), &clock_,
                                            std::move(tokens), token, limits);
  const bool auth = access_->enabled();
  RETURN_IF_ERROR(CheckExposure(flags, auth, !tls.cert_pem.empty()));
  if (!auth && flags.insecure) {
    LogWarning(
        "--insecure: auth is off and hpcai500d listens beyond "
        "loopback; every caller is an admin");
  }
  tls_failures_ = std::make_unique<TlsFailureAudit>(access_.get(), &clock_);
  if (!tls.cert_pem.empty()) grpc_log_.emplace(tls_failures_.get());
  AccessControl* access = access_.get();
  TlsFailureAudit* tls_failures = tls_failures_.get();
  reads_ = std::make_unique<RunReads>(
      store_.get(), &Registry::Builtin(), coordinator_.get(),
      flags.http_public
          ? RunReads::ReadRule()
          : [access](absl::string_view
                         bearer) { return access->AuthorizeRead(bearer); },
      [tls_failures, webhook = change_webhook_.get()] {
        std::string text = tls_failures->MetricsText();
        if (webhook != nullptr) text += webhook->MetricsText();
        return text;
      },
      flags.spread);
  client_service_ = std::make_unique<ClientServiceImpl>(coordinator_.get(),
                                                        reads_.get(), access);
  agent_service_ = std::make_unique<AgentServiceImpl>(
      coordinator_.get(), access,
      /*check_agent_certificates=*/!tls.ca_pem.empty());
  bundle_service_ = std::make_unique<BundleServiceImpl>(
      reads_.get(), access, SiteKeyPathFor(flags.db));
  int grpc_port = 0;
  grpc_server_ = StartCoordinatorServer(
      flags.grpc, CoordinatorServerCredentials(tls), client_service_.get(),
      agent_service_.get(), access, &grpc_port, flags.grpc_idle_timeout_s,
      bundle_service_.get());
  if (grpc_server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--grpc ", flags.grpc, ": cannot listen there"));
  }
  LogInfo(absl::StrCat("grpc listening on ", WithPort(flags.grpc, grpc_port)));
  LogInfo(DescribeServerTls(tls));

  http_ =
      std::make_unique<HttpServer>(reads_.get(), flags.web_dir,
                                   /*threads=*/2, flags.http_max_connections,
                                   flags.http_max_connections_per_client);
  if (!tls.cert_pem.empty()) {
    RETURN_IF_ERROR(http_->UseTls(
        tls.cert_pem, tls.key_pem,
        [tls_failures](const std::string& peer, const std::string& reason) {
          tls_failures->Record(kHttpsPort, peer, reason);
        }));
  }
  RETURN_IF_ERROR(http_->Start(flags.http));
  LogInfo(absl::StrCat(tls.cert_pem.empty() ? "http" : "https",
                       " listening on ", WithPort(flags.http, http_->port())));
  LogInfo(SetupLine(flags, options, auth, !token.empty()));

  ticker_ = std::thread([this] {
    while (!stopping_.load()) {
      coordinator_->Tick();
      tls_failures_->Flush();
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  return absl::OkStatus();
}

void Daemon::Stop() {
  if (stopping_.exchange(true)) return;
  if (coordinator_ != nullptr) coordinator_->Shutdown();
  if (http_ != nullptr) http_->Stop();
  if (grpc_server_ != nullptr) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() +
                           std::chrono::seconds(3));
  }
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace hpcai500
