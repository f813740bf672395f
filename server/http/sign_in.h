// Who reads the HTTP side: the token a request shows, and the answer to a
// request whose token may not read. A browser without one gets the sign-in
// page (server/http/sign_in.html, compiled in), which asks for a viewer
// token and keeps it in a cookie: the page sets it itself, the server
// changes nothing.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_HTTP_SIGN_IN_H_
#define HPCAI500_SERVER_HTTP_SIGN_IN_H_

#include <string>

#include "absl/status/status.h"
#include "server/http/answers.h"

namespace hpcai500 {

// The token a request shows: "Authorization: Bearer T", else the cookie
// hpcai500_token=T; "" when none.
std::string RequestToken(const HttpRequest& request);

// The refusal of `request` for `why`: 401 (no or a bad token) or 403
// (PermissionDenied: a role that may not read), asking for a Bearer token;
// JSON {"error": ...} under /api/ and /metrics, the sign-in page elsewhere.
HttpResponse Refusal(const absl::Status& why, const HttpRequest& request);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_SIGN_IN_H_
