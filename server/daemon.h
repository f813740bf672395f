// hpcai500d assembled: the store, the coordinator with its read side,
// access control and the audit of failed TLS handshakes, the gRPC and HTTP
// servers, and the thread that ticks the coordinator once a second.
// main.cc parses the flags, starts a Daemon, waits for a stop signal and
// stops it.
//
// Not thread-safe: one thread (main's) starts and stops it; the parts it
// holds are thread-safe themselves and serve from their own threads.
#ifndef HPCAI500_SERVER_DAEMON_H_
#define HPCAI500_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "server/agent_service.h"
#include "server/auth/access_control.h"
#include "server/auth/grpc_log.h"
#include "server/auth/tls_failures.h"
#include "server/bundle_service.h"
#include "server/coordinator/coordinator.h"
#include "server/coordinator/run_reads.h"
#include "server/grpc_services.h"
#include "server/http/change_webhook.h"
#include "server/http/http_server.h"
#include "server/options.h"
#include "server/store/store.h"

namespace hpcai500 {

class Daemon {
 public:
  // Checks that --grpc and --http are free before the database is opened
  // (a start refused for a port another process holds creates no file),
  // opens the store, builds the parts, listens on both ports and starts
  // ticking; logs where it listens and how it is set up. Unavailable naming
  // a port it cannot listen on; otherwise the error of what failed: the
  // token or TLS files, the queues, the store, or the exposure rule
  // (server/options.h CheckExposure). Nothing is left running on an error.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      const ServerOptions& flags);
  ~Daemon();  // Stop()s.

  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Wakes the coordinator's watchers, stops the HTTP server, gives the
  // gRPC server's calls 3 s to finish and stops ticking. Idempotent.
  void Stop();

 private:
  Daemon() = default;
  absl::Status Build(const ServerOptions& flags);

  // In the order they are built; each borrows those before it, so they go
  // in the reverse order.
  RealClock clock_;
  // Outlives the coordinator, which queues change points on it.
  std::unique_ptr<ChangeWebhook> change_webhook_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<AccessControl> access_;
  // Outlives the servers: it is told of every handshake they make.
  std::unique_ptr<TlsFailureAudit> tls_failures_;
  std::optional<GrpcLogRoute> grpc_log_;
  std::unique_ptr<RunReads> reads_;
  std::unique_ptr<ClientServiceImpl> client_service_;
  std::unique_ptr<BundleServiceImpl> bundle_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> stopping_{false};
  std::thread ticker_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_DAEMON_H_
