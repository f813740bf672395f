// Tokens and refusals of the HTTP side: see sign_in.h.
#include "server/http/sign_in.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {

// server/http/sign_in.html, compiled in (sign_in_page.cc.in).
extern const char kSignInPage[];

namespace {

namespace http = boost::beast::http;

}  // namespace

std::string RequestToken(const HttpRequest& request) {
  auto auth = request.find(http::field::authorization);
  if (auth != request.end()) {
    absl::string_view value(auth->value().data(), auth->value().size());
    if (absl::ConsumePrefix(&value, "Bearer ")) return std::string(value);
  }
  auto cookie = request.find(http::field::cookie);
  if (cookie == request.end()) return "";
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(cookie->value().data(), cookie->value().size()),
           ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, "hpcai500_token=")) return std::string(part);
  }
  return "";
}

HttpResponse Refusal(const absl::Status& why, const HttpRequest& request) {
  const http::status status = absl::IsPermissionDenied(why)
                                  ? http::status::forbidden
                                  : http::status::unauthorized;
  absl::string_view target(request.target().data(), request.target().size());
  const bool json =
      absl::StartsWith(target, "/api/") || absl::StartsWith(target, "/metrics");
  HttpResponse response{status, request.version()};
  response.set(http::field::content_type,
               json ? "application/json" : "text/html; charset=utf-8");
  response.set(http::field::www_authenticate, "Bearer");
  response.body() =
      json ? nlohmann::json{{"error", std::string(why.message())}}.dump()
           : std::string(kSignInPage);
  return response;
}

}  // namespace hpcai500
