// The HTTP answers' spelling: see answers.h.
#include "server/http/answers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

namespace http = boost::beast::http;

constexpr char kJsonType[] = "application/json";

}  // namespace

http::status HttpStatusFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return http::status::ok;
    case absl::StatusCode::kInvalidArgument:
      return http::status::bad_request;
    case absl::StatusCode::kNotFound:
      return http::status::not_found;
    default:
      return http::status::internal_server_error;
  }
}

HttpResponse MakeResponse(http::status status, unsigned version,
                          absl::string_view content_type, std::string body) {
  HttpResponse response(status, version);
  response.set(http::field::server, "hpcai500");
  response.set(
      http::field::content_type,
      boost::beast::string_view(content_type.data(), content_type.size()));
  response.set("X-Content-Type-Options", "nosniff");
  response.body() = std::move(body);
  return response;
}

HttpResponse TextError(http::status status, unsigned version,
                       absl::string_view message) {
  return MakeResponse(status, version, "text/plain; charset=utf-8",
                      absl::StrCat(message, "\n"));
}

HttpResponse JsonError(http::status status, unsigned version,
                       absl::string_view message) {
  nlohmann::json body = {{"error", std::string(message)}};
  HttpResponse response = MakeResponse(
      status, version, kJsonType,
      body.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                nlohmann::json::error_handler_t::replace));
  response.set(http::field::cache_control, "no-store");
  return response;
}

HttpResponse JsonErrorFor(const absl::Status& status, unsigned version) {
  return JsonError(HttpStatusFor(status), version, status.message());
}

HttpResponse JsonBody(std::string json, unsigned version) {
  HttpResponse response =
      MakeResponse(http::status::ok, version, kJsonType, std::move(json));
  response.set(http::field::cache_control, "no-store");
  return response;
}

HttpResponse JsonOf(const google::protobuf::Message& message,
                    unsigned version) {
  absl::StatusOr<std::string> json = ProtoToJson(message, /*indent=*/false);
  if (!json.ok()) {
    return JsonError(http::status::internal_server_error, version,
                     json.status().message());
  }
  return JsonBody(*std::move(json), version);
}

}  // namespace hpcai500
