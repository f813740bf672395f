// HttpRouter turns one HTTP request into one response: the JSON API under
// /api/v1/, /metrics, the probes, and the static files of the leaderboard
// page. Its routes are one table (router.cc): each names how it matches
// the target, who may call it and what answers it. It owns no sockets, so
// tests call it directly; HttpServer feeds it from the wire.
//
// Thread-safe: Handle() is const and the CoordinatorView is thread-safe.
#ifndef HPCAI500_SERVER_HTTP_ROUTER_H_
#define HPCAI500_SERVER_HTTP_ROUTER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "server/http/answers.h"
#include "server/http/api_queries.h"
#include "server/http/coordinator_view.h"
#include "server/http/request_metrics.h"
#include "server/http/static_files.h"

namespace hpcai500 {

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
  // the page is served from (server/http/static_files.h: a missing folder
  // serves nothing and answers 404).
  HttpRouter(CoordinatorView* view, std::string web_dir);

  HttpRouter(const HttpRouter&) = delete;
  HttpRouter& operator=(const HttpRouter&) = delete;

  // Answers GET and HEAD (HEAD: GET's headers, Content-Length included, and
  // no body); any other method gets 405. Every target but the probes needs
  // the view's AuthorizeRead. Errors are JSON {"error": "..."}
  // under /api/ and plain text elsewhere. Keep-alive follows the request.
  // Each answer's time counts in /metrics' request latency histogram, under
  // RouteLabel of its path (kHealthPath under its own) and its method: GET,
  // HEAD, or "other" for every method refused.
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  // One request as a route's handler sees it: the target's path (percent
  // escapes left in) and query (after '?'; empty when none).
  struct Call {
    absl::string_view path;
    absl::string_view query;
    unsigned version = 11;
  };
  struct Route;  // a row of the table (router.cc)

  // The first route of the table that `target` matches; null for a target
  // that is not an absolute path.
  static const Route* FindRoute(absl::string_view target);

  // The handlers the table names, one per route.
  HttpResponse ServeProbe(const Call& call) const;
  HttpResponse ServeMetrics(const Call& call) const;
  HttpResponse ServeLeaderboard(const Call& call) const;
  HttpResponse ServeRuns(const Call& call) const;
  HttpResponse ServeHistory(const Call& call) const;
  // GET /api/v1/scaling (server/http/run_scaling.h).
  HttpResponse ServeScaling(const Call& call) const;
  // GET /api/v1/changes?name=&series=&since=MS&regressions=1: the change
  // points of the run series (CoordinatorView::ListChanges).
  HttpResponse ServeChanges(const Call& call) const;
  // GET /api/v1/index/systems and /api/v1/index/series.
  HttpResponse ServeIndex(const Call& call) const;
  HttpResponse ServeNodes(const Call& call) const;
  // /api/v1/runs/ROUTE: a run (ID), its ranks' epochs (ID/ranks), or a
  // rank's event log or stderr as a text/plain attachment
  // (ID/attempts/N/ranks/R/events, .../stderr).
  HttpResponse ServeRun(const Call& call) const;
  HttpResponse NoSuchApiRoute(const Call& call) const;
  HttpResponse ServeFile(const Call& call) const;

  // Constant after construction.
  CoordinatorView* const view_;
  const StaticFiles files_;
  // Thread-safe itself; every Handle() adds to it.
  mutable RequestMetrics request_metrics_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_ROUTER_H_
