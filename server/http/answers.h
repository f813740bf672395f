// The HTTP front end's request and response types and the one way each kind
// of answer is spelled: JSON (a document or {"error": ...}) under /api/,
// plain text elsewhere, every one naming the server and refusing MIME
// sniffing. The router's parts build their answers only through these.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_HTTP_ANSWERS_H_
#define HPCAI500_SERVER_HTTP_ANSWERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "boost/beast/http.hpp"
#include "google/protobuf/message.h"

namespace hpcai500 {

using HttpRequest =
    boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse =
    boost::beast::http::response<boost::beast::http::string_body>;

// The HTTP status an absl::Status maps to: InvalidArgument 400, NotFound
// 404, everything else 500.
boost::beast::http::status HttpStatusFor(const absl::Status& status);

// `body` as `content_type` with `status`, named as hpcai500's, never sniffed.
HttpResponse MakeResponse(boost::beast::http::status status, unsigned version,
                          absl::string_view content_type, std::string body);
// `message` and a newline as plain text.
HttpResponse TextError(boost::beast::http::status status, unsigned version,
                       absl::string_view message);
// {"error": message}, never cached.
HttpResponse JsonError(boost::beast::http::status status, unsigned version,
                       absl::string_view message);
// JsonError with the status HttpStatusFor maps `status` to.
HttpResponse JsonErrorFor(const absl::Status& status, unsigned version);
// 200 with `json`, a JSON document, never cached.
HttpResponse JsonBody(std::string json, unsigned version);
// 200 with the message as JSON (proto field names, every primitive field);
// 500 when it cannot be converted.
HttpResponse JsonOf(const google::protobuf::Message& message, unsigned version);
// JsonOf the value, or JsonErrorFor the error.
template <typename T>
HttpResponse JsonOf(const absl::StatusOr<T>& result, unsigned version) {
  if (!result.ok()) return JsonErrorFor(result.status(), version);
  return JsonOf(*result, version);
}

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_ANSWERS_H_
