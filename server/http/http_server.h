// HttpServer serves HttpRouter over HTTP/1.1 (Boost.Beast) from a small
// thread pool: the JSON API, /metrics and the leaderboard page; over TLS
// (HTTPS, and only HTTPS) after UseTls. At most max_connections connections
// are open at once; one more is answered 503 (Service Unavailable) and closed
// (beyond as many again being refused, it is closed unanswered).
//
// Thread-safe: UseTls, Start, port and Stop may be called from any thread,
// but Start at most once.
#ifndef HPCAI500_SERVER_HTTP_HTTP_SERVER_H_
#define HPCAI500_SERVER_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "server/http/coordinator_view.h"
#include "server/http/router.h"

namespace hpcai500 {

class HttpServer {
 public:
  // Told of each failed TLS handshake: the peer ("ipv4:10.0.0.5:41234",
  // "ipv6:[::1]:41234") and OpenSSL's reason. Called on a server thread.
  using TlsFailureHook =
      std::function<void(const std::string& peer, const std::string& reason)>;

  // Limits on what one request may send.
  static constexpr size_t kMaxHeaderBytes = 64 * 1024;
  static constexpr size_t kMaxBodyBytes = 64 * 1024;
  // Open connections served at once, unless the constructor says otherwise.
  static constexpr int kDefaultMaxConnections = 256;
  // Of those, from one client address (a browser opens about 6): one
  // client's idle connections cannot lock the others out.
  static constexpr int kDefaultMaxConnectionsPerClient = 32;

  // `view` is borrowed and must outlive the server. Files of the page are
  // served from `web_dir`. `threads` (>= 1) handle requests; at most
  // `max_connections` (>= 1) connections are served at once, at most
  // `max_per_client` (>= 1) of them from one client address; a connection
  // over either is answered 503.
  HttpServer(CoordinatorView* view, std::string web_dir, int threads = 2,
             int max_connections = kDefaultMaxConnections,
             int max_per_client = kDefaultMaxConnectionsPerClient);
  ~HttpServer();  // Stops.

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves HTTPS with this certificate chain (leaf first) and private key,
  // both PEM text, instead of HTTP; each handshake that fails (not TLS, an
  // alert from a client that does not trust the certificate, a timeout) is
  // told to `on_failure` when set. Call before Start. InvalidArgument when
  // OpenSSL refuses them, FailedPrecondition once started.
  absl::Status UseTls(const std::string& cert_chain_pem,
                      const std::string& private_key_pem,
                      TlsFailureHook on_failure = nullptr);

  // Listens on "HOST:PORT" ("[::1]:PORT" for IPv6; port 0 picks a free one)
  // and starts serving. InvalidArgument for a malformed address,
  // Unavailable when it cannot listen there, FailedPrecondition when
  // already started; each message names the address.
  absl::Status Start(const std::string& host_port);

  // The port listened on; 0 before Start succeeded.
  int port() const { return port_.load(); }

  // Connections being served now (refused ones are not counted).
  int open_connections() const { return open_connections_->load(); }

  // Stops accepting, drops open connections and joins the threads.
  // Idempotent.
  void Stop();

 private:
  void Accept();

  // Constant after construction.
  const HttpRouter router_;
  const int thread_count_;
  const int max_connections_;
  const int max_per_client_;
  // Connections served and connections being refused; shared with them, as
  // they may outlive a Stop().
  const std::shared_ptr<std::atomic<int>> open_connections_ =
      std::make_shared<std::atomic<int>>(0);
  const std::shared_ptr<std::atomic<int>> refusing_ =
      std::make_shared<std::atomic<int>>(0);
  // Connections served per client address; shared with them likewise.
  struct ClientCounts {
    absl::Mutex mu;
    std::map<std::string, int> open ABSL_GUARDED_BY(mu);
  };
  const std::shared_ptr<ClientCounts> clients_ =
      std::make_shared<ClientCounts>();

  // Outlives every socket; io_context is itself thread-safe.
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;  // Used on io_'s threads only
                                             // once Start returned.
  std::atomic<int> port_{0};
  // Set by UseTls before Start (null: plain HTTP); read-only once started.
  std::unique_ptr<boost::asio::ssl::context> tls_;
  TlsFailureHook on_tls_failure_;

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_HTTP_SERVER_H_
