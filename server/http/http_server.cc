#include "server/http/http_server.h"

#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/strand.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"

namespace hpcai500 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// A client that sends nothing for this long is dropped.
constexpr std::chrono::seconds kIdleTimeout(30);
// After an accept error (e.g. out of descriptors), wait before retrying.
constexpr std::chrono::milliseconds kAcceptRetryDelay(100);
// How long a refused connection is drained after its 503, so that the
// request it already sent does not turn the close into a reset that would
// discard the answer.
constexpr std::chrono::seconds kRefusedDrainTimeout(2);

struct HostPort {
  std::string host;
  std::string port;
};

absl::StatusOr<HostPort> ParseHostPort(const std::string& text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad HTTP address '", text, "': ", why,
                     " (expected HOST:PORT, e.g. 127.0.0.1:7580)"));
  };
  HostPort result;
  size_t colon;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return bad("unterminated IPv6 address");
    }
    result.host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string::npos) return bad("no port");
    result.host = text.substr(0, colon);
  }
  result.port = text.substr(colon + 1);
  int port = 0;
  if (result.host.empty()) return bad("no host");
  if (!absl::SimpleAtoi(result.port, &port) || port < 0 || port > 65535) {
    return bad("port must be a number between 0 and 65535");
  }
  return result;
}

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

// One connection: read a request, answer it, repeat while keep-alive holds.
// Runs on its own strand, so its handlers never overlap. It counts itself in
// `open` while it lives.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpRouter* router,
          std::shared_ptr<std::atomic<int>> open)
      : stream_(std::move(socket)), router_(router), open_(std::move(open)) {}

  void Run() {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this()] { self->Read(); });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(HttpServer::kMaxHeaderBytes);
    parser_->body_limit(HttpServer::kMaxBodyBytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code error, size_t) {
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
    stream_.expires_after(kIdleTimeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code error, size_t) {
          if (error || !self->response_.keep_alive()) return self->Close();
          self->Read();
        });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  const HttpRouter* const router_;  // Borrowed from the server.
  const CountedSlot open_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpResponse response_;  // Kept alive while it is written.
};

// A connection over the limit: answered 503 at once without reading the
// request, then drained briefly and closed. It counts itself in `refusing`
// while it lives.
class RefusedConnection
    : public std::enable_shared_from_this<RefusedConnection> {
 public:
  RefusedConnection(tcp::socket socket,
                    std::shared_ptr<std::atomic<int>> refusing)
      : stream_(std::move(socket)), refusing_(std::move(refusing)) {}

  void Run() {
    asio::dispatch(stream_.get_executor(),
                   [self = shared_from_this()] { self->Write(); });
  }

 private:
  void Write() {
    response_ = HttpResponse(http::status::service_unavailable, 11);
    response_.set(http::field::server, "hpcai500");
    response_.set(http::field::content_type, "text/plain; charset=utf-8");
    response_.set(http::field::retry_after, "1");
    response_.body() = "too many connections\n";
    response_.keep_alive(false);
    response_.prepare_payload();
    stream_.expires_after(kRefusedDrainTimeout);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->Close();
          beast::error_code ignored;
          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
          self->Drain();
        });
  }

  // Reads and drops what the client sent until it closes or the drain
  // timeout (set before the write, covering both) expires.
  void Drain() {
    stream_.async_read_some(
        asio::buffer(discard_),
        [self = shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->Close();
          self->Drain();
        });
  }

  void Close() { stream_.close(); }

  beast::tcp_stream stream_;
  const CountedSlot refusing_;
  HttpResponse response_;  // Kept alive while it is written.
  char discard_[4096];
};

}  // namespace

HttpServer::HttpServer(CoordinatorView* view, std::string web_dir, int threads,
                       int max_connections)
    : router_(view, std::move(web_dir)),
      thread_count_(threads < 1 ? 1 : threads),
      max_connections_(max_connections < 1 ? 1 : max_connections),
      acceptor_(io_) {}

HttpServer::~HttpServer() { Stop(); }

absl::Status HttpServer::Start(const std::string& host_port) {
  absl::MutexLock lock(&mu_);
  if (started_ || stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("HTTP server already started or stopped; cannot listen "
                     "on ",
                     host_port));
  }
  auto address = ParseHostPort(host_port);
  if (!address.ok()) return address.status();
  auto cannot_listen = [&](const beast::error_code& error) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for HTTP on ", host_port, ": ", error.message()));
  };
  beast::error_code error;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(address->host, address->port,
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
    if (open_connections_->load() >= max_connections_) {
      if (refusing_->load() < max_connections_) {
        std::make_shared<RefusedConnection>(std::move(socket), refusing_)
            ->Run();
      }  // else the socket closes as it goes out of scope
    } else {
      std::make_shared<Session>(std::move(socket), &router_, open_connections_)
          ->Run();
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
