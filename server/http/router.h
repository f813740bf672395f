// HttpRouter turns one HTTP request into one response: the JSON API under
// /api/v1/, /metrics, and the static files of the leaderboard page. It owns
// no sockets, so tests call it directly; HttpServer feeds it from the wire.
//
// Thread-safe: Handle() is const and the CoordinatorView is thread-safe.
#ifndef HPCAI500_SERVER_HTTP_ROUTER_H_
#define HPCAI500_SERVER_HTTP_ROUTER_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "boost/beast/http.hpp"
#include "server/http/coordinator_view.h"
#include "server/http/request_metrics.h"

namespace hpcai500 {

using HttpRequest =
    boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse =
    boost::beast::http::response<boost::beast::http::string_body>;

// The HTTP status an absl::Status maps to: InvalidArgument 400, NotFound
// 404, everything else 500.
boost::beast::http::status HttpStatusFor(const absl::Status& status);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in query
// strings). InvalidArgument for a malformed escape or a decoded NUL.
absl::StatusOr<std::string> PercentDecode(absl::string_view text,
                                          bool plus_is_space);

// The content type served for a file name, by its extension
// ("application/octet-stream" when unknown).
absl::string_view ContentTypeForPath(absl::string_view path);

// The paths orchestrators probe, answered without a token to GET or HEAD of
// exactly the target. kLivePath (a liveness probe, a container's
// HEALTHCHECK): 200 "ok" while hpcai500d is up and its HTTP side answers
// (the store is opened before it starts). kHealthPath (a readiness probe,
// a load balancer, an alert): the same, but 503 naming the failure while
// CoordinatorView::Health says the coordinator cannot do its work (the
// store's writes fail): restarting would not help, waiting for space does.
inline constexpr absl::string_view kLivePath = "/livez";
inline constexpr absl::string_view kHealthPath = "/healthz";

class HttpRouter {
 public:
  // `view` is borrowed and must outlive the router. `web_dir` is the folder
  // the page is served from; only regular files inside it, outside its
  // node_modules, are served (a missing folder serves nothing and answers
  // 404).
  HttpRouter(CoordinatorView* view, std::string web_dir);

  HttpRouter(const HttpRouter&) = delete;
  HttpRouter& operator=(const HttpRouter&) = delete;

  // Answers GET and HEAD (HEAD: GET's headers, Content-Length included, and
  // no body); any other method gets 405. Every target but kHealthPath needs
  // the view's AuthorizeRead. Errors are JSON {"error": "..."}
  // under /api/ and plain text elsewhere. Keep-alive follows the request.
  // Each answer's time counts in /metrics' request latency histogram, under
  // RouteLabel of its path (kHealthPath under its own) and its method: GET,
  // HEAD, or "other" for every method refused.
  HttpResponse Handle(const HttpRequest& request) const;

  // The file under web_dir that a URL path names, or NotFound when it names
  // none (outside web_dir, "..", not a regular file) and InvalidArgument for
  // a malformed path. `url_path` is the target without its query. "/" is
  // index.html.
  absl::StatusOr<std::filesystem::path> ResolveStaticPath(
      absl::string_view url_path) const;

 private:
  HttpResponse Route(const HttpRequest& request) const;
  HttpResponse ServeApi(absl::string_view path, absl::string_view query,
                        unsigned version) const;
  HttpResponse ServeStatic(absl::string_view path, unsigned version) const;
  // GET /api/v1/scaling (server/http/run_scaling.h).
  HttpResponse ServeScaling(absl::string_view query, unsigned version) const;
  // /api/v1/runs/`route`: a run (ID), its ranks' epochs (ID/ranks), or a
  // rank's event log or stderr as a text/plain attachment
  // (ID/attempts/N/ranks/R/events, .../stderr).
  HttpResponse ServeRun(absl::string_view route, unsigned version) const;

  // Constant after construction.
  CoordinatorView* const view_;
  const std::filesystem::path web_dir_;  // canonical; empty when missing
  // Thread-safe itself; every Handle() adds to it.
  mutable RequestMetrics request_metrics_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_ROUTER_H_
