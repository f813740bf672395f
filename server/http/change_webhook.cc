// The webhook for new change points: see change_webhook.h.
#include "server/http/change_webhook.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "common/json.h"
#include "common/log.h"

namespace hpcai500 {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

absl::Status UrlError(absl::string_view url, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--change-webhook '", url, "': ", why,
                   " (expected http://HOST[:PORT]/PATH)"));
}

}  // namespace

absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url) {
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://")) {
    return UrlError(url, "only http:// is supported");
  }
  WebhookUrl parsed;
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  parsed.target =
      slash == absl::string_view::npos ? "/" : std::string(rest.substr(slash));
  const size_t colon = authority.rfind(':');
  parsed.host = std::string(authority.substr(0, colon));
  parsed.port = colon == absl::string_view::npos
                    ? "80"
                    : std::string(authority.substr(colon + 1));
  int port = 0;
  if (parsed.host.empty()) return UrlError(url, "no host");
  if (!absl::SimpleAtoi(parsed.port, &port) || port < 1 || port > 65535) {
    return UrlError(url, "the port must be a number from 1 to 65535");
  }
  for (char c : parsed.target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return UrlError(url, "a space or control character in the path");
    }
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<ChangeWebhook>> ChangeWebhook::Create(
    const WebhookOptions& options) {
  absl::StatusOr<WebhookUrl> url = ParseWebhookUrl(options.url);
  if (!url.ok()) return url.status();
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(
        "change webhook: max_attempts must be at least 1");
  }
  return std::unique_ptr<ChangeWebhook>(
      new ChangeWebhook(options, *std::move(url)));
}

ChangeWebhook::ChangeWebhook(const WebhookOptions& options, WebhookUrl url)
    : options_(options), url_(std::move(url)), thread_([this] { Deliver(); }) {}

ChangeWebhook::~ChangeWebhook() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void ChangeWebhook::Notify(const v1::ChangePoint& change) {
  absl::StatusOr<std::string> json = ProtoToJson(change, /*indent=*/false);
  if (!json.ok()) {
    LogError(absl::StrCat("change webhook: ", json.status().message()));
    return;
  }
  absl::MutexLock lock(&mu_);
  queue_.push_back(
      absl::StrCat(R"({"event":"change_point","change":)", *json, "}"));
}

void ChangeWebhook::Deliver() {
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  };
  while (true) {
    std::string body;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      body = queue_.front();
    }
    absl::Duration backoff = options_.first_backoff;
    bool delivered = false;
    for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
      const absl::Status posted = PostOnce(body);
      absl::MutexLock lock(&mu_);
      if (posted.ok()) {
        ++delivered_;
        delivered = true;
        break;
      }
      ++failed_attempts_;
      LogWarning(absl::StrCat("change webhook: try ", attempt, " of ",
                              options_.max_attempts, ": ", posted.message()));
      if (attempt == options_.max_attempts) break;
      // Waits out the back-off, or less when stopping.
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_;
      };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff)) return;
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    absl::MutexLock lock(&mu_);
    if (!delivered) ++dropped_;
    queue_.pop_front();
  }
}

absl::Status ChangeWebhook::PostOnce(const std::string& body) const {
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(absl::ToChronoMilliseconds(options_.timeout));
    stream.connect(resolver.resolve(url_.host, url_.port));
    http::request<http::string_body> request(http::verb::post, url_.target, 11);
    request.set(http::field::host, url_.host);
    request.set(http::field::user_agent, "hpcai500d");
    request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (response.result_int() < 200 || response.result_int() > 299) {
      return absl::UnavailableError(
          absl::StrCat(options_.url, " answered ", response.result_int()));
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(options_.url, ": ", e.what()));
  }
}

std::string ChangeWebhook::MetricsText() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(
      "# HELP hpcai500_change_webhook_deliveries_total Change points the "
      "webhook delivered.\n"
      "# TYPE hpcai500_change_webhook_deliveries_total counter\n"
      "hpcai500_change_webhook_deliveries_total ",
      delivered_,
      "\n"
      "# HELP hpcai500_change_webhook_failures_total Webhook tries that "
      "failed (unreachable, or an answer other than 2xx).\n"
      "# TYPE hpcai500_change_webhook_failures_total counter\n"
      "hpcai500_change_webhook_failures_total ",
      failed_attempts_,
      "\n"
      "# HELP hpcai500_change_webhook_dropped_total Change points dropped "
      "after every try failed.\n"
      "# TYPE hpcai500_change_webhook_dropped_total counter\n"
      "hpcai500_change_webhook_dropped_total ",
      dropped_, "\n");
}

int64_t ChangeWebhook::delivered() const {
  absl::MutexLock lock(&mu_);
  return delivered_;
}
int64_t ChangeWebhook::failed_attempts() const {
  absl::MutexLock lock(&mu_);
  return failed_attempts_;
}
int64_t ChangeWebhook::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

}  // namespace hpcai500
