// The change-point webhook (server/http/change_webhook.h) against a real
// receiver on a loopback socket that fails twice before it accepts: the
// change arrives as JSON once, after two failed tries counted in /metrics.
#include "server/http/change_webhook.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

// An HTTP receiver on 127.0.0.1 (a port of the kernel's choosing) that
// answers 500 to its first `failures` requests and 204 after, keeping each
// request's body.
class Receiver {
 public:
  explicit Receiver(int failures) : failures_(failures) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    EXPECT_EQ(
        bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
        0);
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(listen(listener_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Receiver() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    thread_.join();
  }

  int port() const { return port_; }
  std::vector<std::string> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }

 private:
  void Serve() {
    while (true) {
      const int connection = accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      const std::string body = ReadBody(connection);
      int status;
      {
        absl::MutexLock lock(&mu_);
        bodies_.push_back(body);
        status = static_cast<int>(bodies_.size()) <= failures_ ? 500 : 204;
      }
      const std::string answer =
          absl::StrCat("HTTP/1.1 ", status,
                       status == 500 ? " Internal Server Error" : " No Content",
                       "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      (void)!write(connection, answer.data(), answer.size());
      close(connection);
    }
  }
  // The request's body, after headers that give its Content-Length.
  static std::string ReadBody(int connection) {
    std::string data;
    char buffer[4096];
    size_t length = std::string::npos;
    size_t header_end = std::string::npos;
    while (true) {
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end != std::string::npos) {
          const size_t at = data.find("Content-Length: ");
          size_t parsed = 0;
          if (at != std::string::npos &&
              absl::SimpleAtoi(
                  data.substr(at + 16, data.find("\r\n", at) - at - 16),
                  &parsed)) {
            length = parsed;
          }
        }
      }
      if (header_end != std::string::npos && length != std::string::npos &&
          data.size() >= header_end + 4 + length) {
        return data.substr(header_end + 4, length);
      }
      const ssize_t got = read(connection, buffer, sizeof(buffer));
      if (got <= 0) return "";
      data.append(buffer, got);
    }
  }

  const int failures_;
  int listener_ = -1;
  int port_ = 0;
  absl::Mutex mu_;
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

v1::ChangePoint Regression() {
  v1::ChangePoint change;
  change.set_name("nightly");
  change.set_metric("throughput");
  change.set_run_id(41);
  change.set_change_pct(-8.1);
  change.set_regression(true);
  change.set_attribution("libtorch 2.11.0 -> 2.12.0 in every run after");
  return change;
}

// Waits (up to a minute: the machine may be loaded) until `done`.
template <typename Done>
bool Eventually(Done done) {
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

TEST(ChangeWebhook, RetriesAReceiverThatFailsTwiceAndDeliversOnce) {
  Receiver receiver(/*failures=*/2);
  WebhookOptions options;
  options.url =
      absl::StrCat("http://127.0.0.1:", receiver.port(), "/hooks/perf");
  options.first_backoff = absl::Milliseconds(20);
  auto webhook = ChangeWebhook::Create(options);
  ASSERT_TRUE(webhook.ok()) << webhook.status();
  (*webhook)->Notify(Regression());
  ASSERT_TRUE(Eventually([&] { return (*webhook)->delivered() == 1; }));
  EXPECT_EQ((*webhook)->failed_attempts(), 2);
  EXPECT_EQ((*webhook)->dropped(), 0);
  const std::vector<std::string> bodies = receiver.bodies();
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[0], bodies[2]);  // the same change, tried again
  const nlohmann::json json = nlohmann::json::parse(bodies[2]);
  EXPECT_EQ(json["event"], "change_point");
  EXPECT_EQ(json["change"]["run_id"], "41");  // int64 as JSON text
  EXPECT_EQ(json["change"]["metric"], "throughput");
  EXPECT_THAT(json["change"]["attribution"].get<std::string>(),
              HasSubstr("libtorch"));
  const std::string metrics = (*webhook)->MetricsText();
  EXPECT_THAT(metrics,
              HasSubstr("hpcai500_change_webhook_deliveries_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("hpcai500_change_webhook_failures_total 2\n"));
}

TEST(ChangeWebhook, GivesUpAfterItsTriesAndCountsTheDrop) {
  Receiver receiver(/*failures=*/100);
  WebhookOptions options;
  options.url = absl::StrCat("http://127.0.0.1:", receiver.port(), "/");
  options.first_backoff = absl::Milliseconds(5);
  options.max_attempts = 3;
  auto webhook = ChangeWebhook::Create(options);
  ASSERT_TRUE(webhook.ok()) << webhook.status();
  (*webhook)->Notify(Regression());
  ASSERT_TRUE(Eventually([&] { return (*webhook)->dropped() == 1; }));
  EXPECT_EQ((*webhook)->failed_attempts(), 3);
  EXPECT_EQ((*webhook)->delivered(), 0);
  EXPECT_EQ(receiver.bodies().size(), 3u);
}

TEST(ParseWebhookUrl, TakesHttpWithPortAndPathAndRefusesTheRest) {
  const WebhookUrl url = *ParseWebhookUrl("http://ci.example:8080/hook?x=1");
  EXPECT_EQ(url.host, "ci.example");
  EXPECT_EQ(url.port, "8080");
  EXPECT_EQ(url.target, "/hook?x=1");
  const WebhookUrl bare = *ParseWebhookUrl("http://ci.example");
  EXPECT_EQ(bare.port, "80");
  EXPECT_EQ(bare.target, "/");
  for (const char* bad :
       {"https://ci.example/", "ci.example:80/x", "http://:80/",
        "http://ci.example:99999/", "http://ci.example/a b"}) {
    const absl::Status status = ParseWebhookUrl(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("--change-webhook")) << bad;
  }
}

}  // namespace
}  // namespace hpcai500
