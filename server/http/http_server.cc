#include "server/http/http_server.h"

#include <chrono>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "common/host_port.h"
#include "server/http/https_context.h"

namespace hpcai500 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// A client that takes this long to read an answer is dropped.
constexpr std::chrono::seconds kIdleTimeout(30);
// A request (its headers and body), and a TLS handshake, must arrive within
// this: a connection that trickles or says nothing frees its slot soon.
constexpr std::chrono::seconds kRequestTimeout(10);
// After an accept error (e.g. out of descriptors), wait before retrying.
constexpr std::chrono::milliseconds kAcceptRetryDelay(100);
// How long a refused connection is drained after its 503, so that the
// request it already sent does not turn the close into a reset that would
// discard the answer.
constexpr std::chrono::seconds kRefusedDrainTimeout(2);
// How long a TLS connection waits for the client's close_notify.
constexpr std::chrono::seconds kTlsShutdownTimeout(2);

// Holds one unit of a shared count while it lives.
class CountedSlot {
 public:
  explicit CountedSlot(std::shared_ptr<std::atomic<int>> count)
      : count_(std::move(count)) {
    ++*count_;
  }
  ~CountedSlot() { --*count_; }
  CountedSlot(const CountedSlot&) = delete;
  CountedSlot& operator=(const CountedSlot&) = delete;

 private:
  const std::shared_ptr<std::atomic<int>> count_;
};

// Holds one connection of a client address in a ClientCounts while it
// lives.
template <class Counts>
class ClientSlot {
 public:
  ClientSlot(std::shared_ptr<Counts> counts, std::string client)
      : counts_(std::move(counts)), client_(std::move(client)) {
    absl::MutexLock lock(&counts_->mu);
    ++counts_->open[client_];
  }
  ~ClientSlot() {
    absl::MutexLock lock(&counts_->mu);
    auto it = counts_->open.find(client_);
    if (it != counts_->open.end() && --it->second <= 0) {
      counts_->open.erase(it);
    }
  }
  ClientSlot(const ClientSlot&) = delete;
  ClientSlot& operator=(const ClientSlot&) = delete;

 private:
  const std::shared_ptr<Counts> counts_;
  const std::string client_;
};

// The two kinds of connection: plain TCP, and TLS over TCP.
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

template <class Stream>
constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

// A Stream over an accepted socket; `tls` is used for TlsStream only.
template <class Stream>
Stream MakeStream(tcp::socket socket, asio::ssl::context* tls) {
  if constexpr (kIsTls<Stream>) {
    return Stream(std::move(socket), *tls);
  } else {
    return Stream(std::move(socket));
  }
}

// Tells `on_failure` (when set) that the handshake on `socket` failed with
// `error`, naming the peer as gRPC names peers.
void ReportTlsFailure(const HttpServer::TlsFailureHook& on_failure,
                      const tcp::socket& socket,
                      const beast::error_code& error) {
  if (!on_failure) return;
  beast::error_code no_peer;
  const tcp::endpoint peer = socket.remote_endpoint(no_peer);
  std::string name = "unknown";
  if (!no_peer) {
    name = peer.address().is_v4()
               ? absl::StrCat("ipv4:", peer.address().to_string(), ":",
                              peer.port())
               : absl::StrCat("ipv6:[", peer.address().to_string(),
                              "]:", peer.port());
  }
  on_failure(name, error.message());
}

// Over TLS, the server's side of the handshake on `stream`, then `next`; a
// handshake that fails (not TLS, a client that does not trust the
// certificate, a timeout) is told to `on_failure` and ends in `failed`. Plain
// HTTP: `next` at once. `next` and `failed` keep the connection that owns
// `stream` alive; `on_failure` is borrowed from the server.
template <class Stream, class Next, class Failed>
void HandshakeThen(Stream& stream, const HttpServer::TlsFailureHook& on_failure,
                   Next next, Failed failed) {
  if constexpr (kIsTls<Stream>) {
    stream.async_handshake(
        asio::ssl::stream_base::server,
        [&stream, &on_failure, next = std::move(next),
         failed = std::move(failed)](beast::error_code error) mutable {
          if (error) {
            ReportTlsFailure(on_failure,
                             beast::get_lowest_layer(stream).socket(), error);
            return failed();
          }
          next();
        });
  } else {
    next();
  }
}

// One connection: (over TLS, a handshake first, then) read a request, answer
// it, repeat while keep-alive holds. Runs on its own strand, so its handlers
// never overlap. It counts itself in `open` while it lives.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(tcp::socket socket, asio::ssl::context* tls,
          const HttpServer::TlsFailureHook* on_tls_failure,
          const HttpRouter* router, std::shared_ptr<std::atomic<int>> open,
          std::shared_ptr<void> client_slot)
      : stream_(MakeStream<Stream>(std::move(socket), tls)),
        on_tls_failure_(on_tls_failure),
        router_(router),
        open_(std::move(open)),
        client_slot_(std::move(client_slot)) {}

  void Run() {
    asio::dispatch(stream_.get_executor(),
                   [self = this->shared_from_this()] { self->Start(); });
  }

 private:
  // The handshake must arrive within kRequestTimeout (Read sets it again).
  // A failed one leaves nothing to answer.
  void Start() {
    beast::get_lowest_layer(stream_).expires_after(kRequestTimeout);
    auto self = this->shared_from_this();
    HandshakeThen(
        stream_, *on_tls_failure_, [self] { self->Read(); },
        [self] { self->CloseSocket(); });
  }

  void Read() {
    parser_.emplace();
    parser_->header_limit(HttpServer::kMaxHeaderBytes);
    parser_->body_limit(HttpServer::kMaxBodyBytes);
    beast::get_lowest_layer(stream_).expires_after(kRequestTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code error, size_t) {
          self->OnRead(error);
        });
  }

  void OnRead(beast::error_code error) {
    if (error == http::error::end_of_stream) return Close();
    if (error == http::error::header_limit) {
      return Refuse(http::status::request_header_fields_too_large,
                    "request headers too large");
    }
    if (error == http::error::body_limit) {
      return Refuse(http::status::payload_too_large, "request body too large");
    }
    if (error &&
        error.category() ==
            http::make_error_code(http::error::bad_target).category()) {
      // Any other parse error: the request was malformed.
      return Refuse(http::status::bad_request, "malformed HTTP request");
    }
    if (error) return Close();  // timeout, reset: nobody to answer
    Write(router_->Handle(parser_->get()));
  }

  // Answers a request the parser could not finish, then closes.
  void Refuse(http::status status, absl::string_view why) {
    HttpResponse response(status, 11);
    response.set(http::field::server, "hpcai500");
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = absl::StrCat(why, "\n");
    response.keep_alive(false);
    response.prepare_payload();
    Write(std::move(response));
  }

  void Write(HttpResponse response) {
    response_ = std::move(response);
    beast::get_lowest_layer(stream_).expires_after(kIdleTimeout);
    http::async_write(
        stream_, response_,
        [self = this->shared_from_this()](beast::error_code error, size_t) {
          if (error || !self->response_.keep_alive()) return self->Close();
          self->Read();
        });
  }

  // Over TLS, says close_notify first (bounded by kTlsShutdownTimeout).
  void Close() {
    if constexpr (kIsTls<Stream>) {
      beast::get_lowest_layer(stream_).expires_after(kTlsShutdownTimeout);
      stream_.async_shutdown([self = this->shared_from_this()](
                                 beast::error_code) { self->CloseSocket(); });
    } else {
      CloseSocket();
    }
  }

  void CloseSocket() {
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(
        tcp::socket::shutdown_send, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  Stream stream_;
  // Borrowed from the server.
  const HttpServer::TlsFailureHook* const on_tls_failure_;
  const HttpRouter* const router_;
  const CountedSlot open_;
  const std::shared_ptr<void> client_slot_;  // its client's count
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpResponse response_;  // Kept alive while it is written.
};

// A connection over the limit: (over TLS, after the handshake) answered 503
// at once without reading the request, then drained briefly and closed. It
// counts itself in `refusing` while it lives.
template <class Stream>
class RefusedConnection
    : public std::enable_shared_from_this<RefusedConnection<Stream>> {
 public:
  RefusedConnection(tcp::socket socket, asio::ssl::context* tls,
                    const HttpServer::TlsFailureHook* on_tls_failure,
                    std::shared_ptr<std::atomic<int>> refusing)
      : stream_(MakeStream<Stream>(std::move(socket), tls)),
        on_tls_failure_(on_tls_failure),
        refusing_(std::move(refusing)) {}

  void Run() {
    asio::dispatch(stream_.get_executor(),
                   [self = this->shared_from_this()] { self->Start(); });
  }

 private:
  // The drain timeout, set here, covers handshake, write and drain.
  void Start() {
    beast::get_lowest_layer(stream_).expires_after(kRefusedDrainTimeout);
    auto self = this->shared_from_this();
    HandshakeThen(
        stream_, *on_tls_failure_, [self] { self->Write(); },
        [self] { self->Close(); });
  }

  void Write() {
    response_ = HttpResponse(http::status::service_unavailable, 11);
    response_.set(http::field::server, "hpcai500");
    response_.set(http::field::content_type, "text/plain; charset=utf-8");
    response_.set(http::field::retry_after, "1");
    response_.body() = "too many connections\n";
    response_.keep_alive(false);
    response_.prepare_payload();
    http::async_write(
        stream_, response_,
        [self = this->shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->Close();
          beast::error_code ignored;
          beast::get_lowest_layer(self->stream_)
              .socket()
              .shutdown(tcp::socket::shutdown_send, ignored);
          self->Drain();
        });
  }

  // Reads and drops what the client sent (raw bytes, TLS or not) until it
  // closes or the drain timeout expires.
  void Drain() {
    beast::get_lowest_layer(stream_).async_read_some(
        asio::buffer(discard_),
        [self = this->shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->Close();
          self->Drain();
        });
  }

  void Close() { beast::get_lowest_layer(stream_).close(); }

  Stream stream_;
  // Borrowed from the server.
  const HttpServer::TlsFailureHook* const on_tls_failure_;
  const CountedSlot refusing_;
  HttpResponse response_;  // Kept alive while it is written.
  char discard_[4096];
};

// Serves (or refuses, over the limit) one accepted connection as a Stream.
template <class Stream>
void Serve(tcp::socket socket, asio::ssl::context* tls,
           const HttpServer::TlsFailureHook* on_tls_failure, bool refuse,
           const HttpRouter* router, std::shared_ptr<std::atomic<int>> open,
           std::shared_ptr<std::atomic<int>> refusing,
           std::shared_ptr<void> client_slot) {
  if (refuse) {
    std::make_shared<RefusedConnection<Stream>>(
        std::move(socket), tls, on_tls_failure, std::move(refusing))
        ->Run();
  } else {
    std::make_shared<Session<Stream>>(std::move(socket), tls, on_tls_failure,
                                      router, std::move(open),
                                      std::move(client_slot))
        ->Run();
  }
}

}  // namespace

HttpServer::HttpServer(CoordinatorView* view, std::string web_dir, int threads,
                       int max_connections, int max_per_client)
    : router_(view, std::move(web_dir)),
      thread_count_(threads < 1 ? 1 : threads),
      max_connections_(max_connections < 1 ? 1 : max_connections),
      max_per_client_(max_per_client < 1 ? 1 : max_per_client),
      acceptor_(io_) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::UseTls(const std::string& cert_chain_pem,
                                const std::string& private_key_pem,
                                TlsFailureHook on_failure) {
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError(
        "HTTP server already started or stopped; too late to turn on TLS");
  }
  absl::StatusOr<std::unique_ptr<asio::ssl::context>> context =
      NewHttpsContext(cert_chain_pem, private_key_pem);
  if (!context.ok()) return context.status();
  tls_ = *std::move(context);
  on_tls_failure_ = std::move(on_failure);
  return absl::OkStatus();
}

absl::Status HttpServer::Start(const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("HTTP server already started or stopped; cannot listen "
                     "on ",
                     host_port));
  }
  absl::StatusOr<HostPort> address = ParseHostPort(host_port);
  if (!address.ok()) return address.status();
  auto cannot_listen = [&](const beast::error_code& error) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for HTTP on ", host_port, ": ", error.message()));
  };
  beast::error_code error;
  tcp::resolver resolver(io_);
  auto endpoints =
      resolver.resolve(address->host, std::to_string(address->port),
                       tcp::resolver::passive, error);
  if (error) return cannot_listen(error);
  if (endpoints.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ",
                                               host_port, ": no such address"));
  }
  tcp::endpoint endpoint = endpoints.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), error);
  if (!error)
    acceptor_.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error)
    acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    beast::error_code ignored;
    acceptor_.close(ignored);
    return cannot_listen(error);
  }
  port_ = acceptor_.local_endpoint().port();
  started_ = true;
  Accept();
  for (int i = 0; i < thread_count_; ++i) {
    threads_.emplace_back([this] { io_.run(); });
  }
  return absl::OkStatus();
}

void HttpServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code error,
                                                        tcp::socket socket) {
    if (error == asio::error::operation_aborted) return;
    if (error) {
      auto timer = std::make_shared<asio::steady_timer>(io_);
      timer->expires_after(kAcceptRetryDelay);
      timer->async_wait([this, timer](beast::error_code) { Accept(); });
      return;
    }
    // Only this handler adds sessions, and accepts do not overlap, so the
    // count cannot grow past the limit between this check and the Session.
    // Refusals are bounded too: past as many again, a connection is closed
    // without an answer.
    // Per client address likewise: one client's idle connections cannot
    // hold every slot.
    beast::error_code no_peer;
    const std::string client =
        socket.remote_endpoint(no_peer).address().to_string();
    bool client_full = false;
    {
      absl::MutexLock lock(&clients_->mu);
      auto it = clients_->open.find(client);
      client_full = it != clients_->open.end() && it->second >= max_per_client_;
    }
    const bool refuse =
        open_connections_->load() >= max_connections_ || client_full;
    std::shared_ptr<void> client_slot;
    if (!refuse) {
      client_slot =
          std::make_shared<ClientSlot<ClientCounts>>(clients_, client);
    }
    if (refuse && refusing_->load() >= max_connections_) {
      // The socket closes as it goes out of scope.
    } else if (tls_ != nullptr) {
      Serve<TlsStream>(std::move(socket), tls_.get(), &on_tls_failure_, refuse,
                       &router_, open_connections_, refusing_,
                       std::move(client_slot));
    } else {
      Serve<PlainStream>(std::move(socket), nullptr, &on_tls_failure_, refuse,
                         &router_, open_connections_, refusing_,
                         std::move(client_slot));
    }
    Accept();
  });
}

void HttpServer::Stop() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    threads.swap(threads_);
  }
  io_.stop();
  for (std::thread& thread : threads) thread.join();
  // No thread runs io_ any more, so the acceptor may be touched here. Open
  // connections are dropped when io_ destroys their pending handlers.
  beast::error_code ignored;
  acceptor_.close(ignored);
}

}  // namespace hpcai500
