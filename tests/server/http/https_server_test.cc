// HttpServer over TLS on loopback, with certificates openssl makes for the
// test: what HTTPS adds to http_server_test.cc.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/ssl.hpp"
#include "gtest/gtest.h"
#include "server/http/http_server.h"
#include "tests/common/test_certificates.h"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;

class HttpsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        new std::string(std::filesystem::temp_directory_path() /
                        ("hpcai500-https-test-" + std::to_string(::getpid())));
    certs_ = new testing::TestCertificates(*dir_);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete certs_;
    delete dir_;
  }

  void SetUp() override {
    ASSERT_TRUE(certs_->ok()) << certs_->log();
    server_ = std::make_unique<HttpServer>(&view_, "/nonexistent",
                                           /*threads=*/2,
                                           /*max_connections=*/1);
    ASSERT_TRUE(
        server_->UseTls(certs_->pem("server.pem"), certs_->pem("server.key"))
            .ok());
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
  }

  tcp::endpoint Endpoint() const {
    return tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                         static_cast<unsigned short>(server_->port()));
  }

  // A TLS client stream connected to the server, trusting `ca` and checking
  // the name "localhost"; the handshake's error in *error.
  std::unique_ptr<beast::ssl_stream<tcp::socket>> Connect(
      ssl::context& client, beast::error_code* error) {
    auto stream = std::make_unique<beast::ssl_stream<tcp::socket>>(io_, client);
    stream->next_layer().connect(Endpoint());
    stream->set_verify_callback(ssl::host_name_verification("localhost"));
    stream->handshake(ssl::stream_base::client, *error);
    return stream;
  }

  ssl::context ClientContext(const std::string& ca) {
    ssl::context client(ssl::context::tls_client);
    client.set_verify_mode(ssl::verify_peer);
    std::string pem = certs_->pem(ca);
    client.add_certificate_authority(asio::buffer(pem));
    return client;
  }

  // GET /metrics on `stream`.
  static HttpResponse GetMetrics(beast::ssl_stream<tcp::socket>& stream) {
    HttpRequest request(http::verb::get, "/metrics", 11);
    request.set(http::field::host, "localhost");
    http::write(stream, request);
    beast::flat_buffer buffer;
    HttpResponse response;
    http::read(stream, buffer, response);
    return response;
  }

  static std::string* dir_;
  static testing::TestCertificates* certs_;
  FakeCoordinatorView view_;
  std::unique_ptr<HttpServer> server_;
  asio::io_context io_;
};

std::string* HttpsServerTest::dir_ = nullptr;
testing::TestCertificates* HttpsServerTest::certs_ = nullptr;

TEST_F(HttpsServerTest, ServesOverTlsToAClientTrustingTheCa) {
  ssl::context client = ClientContext("ca.pem");
  beast::error_code error;
  auto stream = Connect(client, &error);
  ASSERT_FALSE(error) << error.message();
  HttpResponse response = GetMetrics(*stream);
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(response.body().rfind(view_.MetricsText(), 0), 0u)
      << response.body();
}

TEST_F(HttpsServerTest, ClientTrustingAnotherCaFailsTheHandshake) {
  ssl::context client = ClientContext("other-ca.pem");
  beast::error_code error;
  Connect(client, &error);
  EXPECT_TRUE(error);
}

TEST_F(HttpsServerTest, PlainHttpGetsNoAnswer) {
  tcp::socket socket(io_);
  socket.connect(Endpoint());
  HttpRequest request(http::verb::get, "/metrics", 11);
  request.set(http::field::host, "127.0.0.1");
  http::write(socket, request);
  beast::flat_buffer buffer;
  HttpResponse response;
  beast::error_code error;
  http::read(socket, buffer, response, error);
  EXPECT_TRUE(error);  // closed after a failed handshake: no HTTP answer
  EXPECT_EQ(response.body(), "");
}

TEST_F(HttpsServerTest, ConnectionOverTheLimitIsAnswered503OverTls) {
  ssl::context client = ClientContext("ca.pem");
  beast::error_code error;
  auto held = Connect(client, &error);  // takes the only slot
  ASSERT_FALSE(error) << error.message();
  ASSERT_EQ(GetMetrics(*held).result(), http::status::ok);
  EXPECT_EQ(server_->open_connections(), 1);

  auto refused = Connect(client, &error);
  ASSERT_FALSE(error) << error.message();
  HttpResponse response = GetMetrics(*refused);
  EXPECT_EQ(response.result(), http::status::service_unavailable);
  EXPECT_FALSE(response.keep_alive());
  EXPECT_EQ(server_->open_connections(), 1);
}

TEST(HttpsServer, UseTlsRefusesAKeyOfAnotherCertificateAndComesBeforeStart) {
  std::string dir = std::filesystem::temp_directory_path() /
                    ("hpcai500-https-use-test-" + std::to_string(::getpid()));
  testing::TestCertificates certs(dir);
  ASSERT_TRUE(certs.ok()) << certs.log();
  FakeCoordinatorView view;
  HttpServer server(&view, "/nonexistent");
  EXPECT_EQ(
      server.UseTls(certs.pem("server.pem"), certs.pem("node-a.key")).code(),
      absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  EXPECT_EQ(
      server.UseTls(certs.pem("server.pem"), certs.pem("server.key")).code(),
      absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hpcai500
