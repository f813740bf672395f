#include "server/http/http_server.h"

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

// Sends one request on `socket`, connected, and reads the answer.
HttpResponse FetchOn(tcp::socket& socket, HttpRequest request) {
  request.set(http::field::host, "127.0.0.1");
  request.prepare_payload();
  http::write(socket, request);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(16 << 20);
  parser.skip(request.method() == http::verb::head);
  http::read(socket, buffer, parser);
  return parser.release();
}

// Sends one request on a fresh loopback connection and reads the answer.
HttpResponse Fetch(int port, HttpRequest request) {
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port)));
  return FetchOn(socket, std::move(request));
}

TEST(HttpServer, ServesARunOverALoopbackSocket) {
  FakeCoordinatorView view;
  view.AddRun(SampleRun(42));
  HttpServer server(&view, std::string(HPCAI500_SOURCE_DIR) + "/web");
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);

  HttpResponse response =
      Fetch(server.port(), HttpRequest(http::verb::get, "/api/v1/runs/42", 11));

  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(response[http::field::content_type], "application/json");
  nlohmann::json run = nlohmann::json::parse(response.body());
  EXPECT_EQ(run["spec"]["name"], "fmnist-smoke");

  HttpResponse page =
      Fetch(server.port(), HttpRequest(http::verb::head, "/", 11));
  EXPECT_EQ(page.result(), http::status::ok);
  EXPECT_NE(page[http::field::content_length], "0");
  server.Stop();
}

TEST(HttpServer, KeepsTheConnectionForSeveralRequests) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent");
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(server.port())));
  beast::flat_buffer buffer;
  for (int i = 0; i < 3; ++i) {
    HttpRequest request(http::verb::get, "/metrics", 11);
    request.set(http::field::host, "127.0.0.1");
    http::write(socket, request);
    HttpResponse response;
    http::read(socket, buffer, response);
    EXPECT_EQ(response.result(), http::status::ok) << i;
    // The view's metrics, then the server's own request histograms, which
    // count the requests answered before this one on the same connection.
    EXPECT_EQ(response.body().rfind(view.MetricsText(), 0), 0u) << i;
    if (i > 0) {
      EXPECT_NE(response.body().find(
                    "hpcai500_http_request_duration_seconds_count{route=\"/"
                    "metrics\",method=\"GET\"} " +
                    std::to_string(i) + "\n"),
                std::string::npos)
          << i << ": " << response.body();
    }
  }
}

TEST(HttpServer, OversizedHeadersAreRefused) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent");
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  HttpRequest request(http::verb::get, "/metrics", 11);
  // Several fields, each under Beast's own per-field limit.
  for (size_t i = 0; i * 16000 <= HttpServer::kMaxHeaderBytes; ++i) {
    request.set("X-Padding-" + std::to_string(i), std::string(16000, 'a'));
  }
  HttpResponse response = Fetch(server.port(), request);
  EXPECT_EQ(response.result(), http::status::request_header_fields_too_large);
}

TEST(HttpServer, OversizedBodyIsRefused) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent");
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  HttpRequest request(http::verb::post, "/api/v1/runs", 11);
  request.body() = std::string(HttpServer::kMaxBodyBytes + 10, 'a');
  HttpResponse response = Fetch(server.port(), request);
  EXPECT_EQ(response.result(), http::status::payload_too_large);
}

TEST(HttpServer, MalformedAddressIsInvalidArgumentNamingIt) {
  FakeCoordinatorView view;
  for (const char* address :
       {"127.0.0.1", "127.0.0.1:http", ":80", "127.0.0.1:70000", "[::1"}) {
    HttpServer server(&view, "/nonexistent");
    absl::Status status = server.Start(address);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_NE(status.message().find(address), std::string::npos)
        << status.message();
  }
}

TEST(HttpServer, PortInUseIsUnavailableNamingTheAddress) {
  FakeCoordinatorView view;
  HttpServer first(&view, "/nonexistent");
  ASSERT_TRUE(first.Start("127.0.0.1:0").ok());
  std::string address = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(&view, "/nonexistent");
  absl::Status status = second.Start(address);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find(address), std::string::npos)
      << status.message();
}

TEST(HttpServer, StartTwiceIsRefusedAndStopIsIdempotent) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent");
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  EXPECT_EQ(server.Start("127.0.0.1:0").code(),
            absl::StatusCode::kFailedPrecondition);
  server.Stop();
  server.Stop();
}

// Polls `done` every 10 ms for up to 5 s.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 500 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(HttpServer, ConnectionOverTheLimitIsAnswered503AndClosed) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent", /*threads=*/2,
                    /*max_connections=*/2);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(server.port()));
  asio::io_context io;
  // Two idle keep-alive clients hold both slots.
  tcp::socket first(io), second(io);
  first.connect(endpoint);
  second.connect(endpoint);
  ASSERT_TRUE(Eventually([&] { return server.open_connections() == 2; }))
      << server.open_connections();

  HttpResponse refused =
      Fetch(server.port(), HttpRequest(http::verb::get, "/metrics", 11));
  EXPECT_EQ(refused.result(), http::status::service_unavailable);
  EXPECT_EQ(refused[http::field::retry_after], "1");
  EXPECT_FALSE(refused.keep_alive());
  EXPECT_EQ(server.open_connections(), 2);  // the refused one never counted

  // The held connections are still served.
  EXPECT_EQ(
      FetchOn(first, HttpRequest(http::verb::get, "/metrics", 11)).result(),
      http::status::ok);

  // A freed slot takes a new connection.
  second.close();
  ASSERT_TRUE(Eventually([&] { return server.open_connections() == 1; }))
      << server.open_connections();
  EXPECT_EQ(Fetch(server.port(), HttpRequest(http::verb::get, "/metrics", 11))
                .result(),
            http::status::ok);
}

TEST(HttpServer, OneClientsIdleConnectionsDoNotLockOthersOut) {
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent", /*threads=*/2,
                    /*max_connections=*/16, /*max_per_client=*/3);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(server.port()));
  asio::io_context io;
  // A flood of idle connections from 127.0.0.1: three are held, the rest
  // are answered 503 at once.
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 3; ++i) {
    idle.emplace_back(io).connect(endpoint);
  }
  ASSERT_TRUE(Eventually([&] { return server.open_connections() == 3; }))
      << server.open_connections();
  EXPECT_EQ(Fetch(server.port(), HttpRequest(http::verb::get, "/metrics", 11))
                .result(),
            http::status::service_unavailable);
  // Another client address (127.0.0.2, loopback too) is served.
  tcp::socket other(io);
  other.open(tcp::v4());
  other.bind(tcp::endpoint(asio::ip::make_address("127.0.0.2"), 0));
  other.connect(endpoint);
  EXPECT_EQ(
      FetchOn(other, HttpRequest(http::verb::get, "/metrics", 11)).result(),
      http::status::ok);
  // When the flooding client lets go, it is served again.
  idle.pop_back();
  ASSERT_TRUE(Eventually([&] { return server.open_connections() <= 3; }));
  EXPECT_EQ(Fetch(server.port(), HttpRequest(http::verb::get, "/metrics", 11))
                .result(),
            http::status::ok);
}

}  // namespace
}  // namespace hpcai500
