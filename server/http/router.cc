// The HTTP routes as one table, and their handlers: see router.h.
#include "server/http/router.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/http/run_history.h"
#include "server/http/run_scaling.h"
#include "server/http/sign_in.h"

namespace hpcai500 {
namespace {

namespace http = boost::beast::http;

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";
// The runs a page computed here reads at most (the coordinator's cap).
constexpr int kComputedRunsLimit = 10'000;

// The newest runs `request` matches, request.limit() of them (0:
// kComputedRunsLimit), for the pages computed here (history, scaling and
// the indexes).
absl::StatusOr<std::vector<v1::Run>> ComputedRuns(CoordinatorView& view,
                                                  v1::ListRunsRequest request) {
  if (request.limit() == 0) request.set_limit(kComputedRunsLimit);
  absl::StatusOr<v1::ListRunsResponse> runs = view.ListRuns(request);
  if (!runs.ok()) return runs.status();
  return std::vector<v1::Run>(runs->runs().begin(), runs->runs().end());
}

// A request's method as /metrics labels it: GET, HEAD, or "other" for any
// method refused, since a client may invent any number of them.
absl::string_view MethodLabel(http::verb method) {
  switch (method) {
    case http::verb::get:
      return "GET";
    case http::verb::head:
      return "HEAD";
    default:
      return "other";
  }
}

}  // namespace

// A row of the route table. Every route answers GET and HEAD alike (HEAD
// drops the body in Handle); Handle refuses other methods before the table.
struct HttpRouter::Route {
  enum class Match {
    kTarget,  // the whole target, query included: nothing else slips past
    kPath,    // the target's path
    kPrefix,  // the target's path begins with the pattern
  };
  enum class Access {
    kAnyone,  // no token: the probes
    kReader,  // the view's AuthorizeRead
  };
  Match match;
  absl::string_view pattern;
  Access access;
  HttpResponse (HttpRouter::*serve)(const Call&) const;
};

const HttpRouter::Route* HttpRouter::FindRoute(absl::string_view target) {
  using Match = Route::Match;
  constexpr Route::Access kAnyone = Route::Access::kAnyone;
  constexpr Route::Access kReader = Route::Access::kReader;
  // The first row that matches answers.
  static constexpr Route kRoutes[] = {
      {Match::kTarget, kLivePath, kAnyone, &HttpRouter::ServeProbe},
      {Match::kTarget, kHealthPath, kAnyone, &HttpRouter::ServeProbe},
      {Match::kPath, "/metrics", kReader, &HttpRouter::ServeMetrics},
      {Match::kPath, "/api/v1/leaderboard", kReader,
       &HttpRouter::ServeLeaderboard},
      {Match::kPath, "/api/v1/runs", kReader, &HttpRouter::ServeRuns},
      {Match::kPath, "/api/v1/history", kReader, &HttpRouter::ServeHistory},
      {Match::kPath, "/api/v1/scaling", kReader, &HttpRouter::ServeScaling},
      {Match::kPath, "/api/v1/index/systems", kReader, &HttpRouter::ServeIndex},
      {Match::kPath, "/api/v1/index/series", kReader, &HttpRouter::ServeIndex},
      {Match::kPath, "/api/v1/nodes", kReader, &HttpRouter::ServeNodes},
      {Match::kPath, "/api/v1/changes", kReader, &HttpRouter::ServeChanges},
      {Match::kPrefix, "/api/v1/runs/", kReader, &HttpRouter::ServeRun},
      {Match::kPrefix, "/api/v1/", kReader, &HttpRouter::NoSuchApiRoute},
      {Match::kPrefix, "/", kReader, &HttpRouter::ServeFile},
  };
  const absl::string_view path = target.substr(0, target.find('?'));
  for (const Route& route : kRoutes) {
    const bool matches = route.match == Match::kTarget ? target == route.pattern
                         : route.match == Match::kPath
                             ? path == route.pattern
                             : absl::StartsWith(path, route.pattern);
    if (matches) return &route;
  }
  return nullptr;
}

HttpRouter::HttpRouter(CoordinatorView* view, std::string web_dir)
    : view_(view), files_(web_dir) {}

HttpResponse HttpRouter::Handle(const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  const absl::string_view target(request.target().data(),
                                 request.target().size());
  const size_t question = target.find('?');
  const Call call{target.substr(0, question),
                  question == absl::string_view::npos
                      ? absl::string_view()
                      : target.substr(question + 1),
                  request.version()};
  const Route* route = FindRoute(target);
  HttpResponse response;
  if (request.method() != http::verb::get &&
      request.method() != http::verb::head) {
    response = TextError(http::status::method_not_allowed, request.version(),
                         "method not allowed: use GET or HEAD");
    response.set(http::field::allow, "GET, HEAD");
  } else if (absl::Status allowed =
                 route != nullptr && route->access == Route::Access::kAnyone
                     ? absl::OkStatus()
                     : view_->AuthorizeRead(RequestToken(request));
             !allowed.ok()) {
    response = Refusal(allowed, request);
  } else if (route == nullptr) {
    response = TextError(http::status::bad_request, request.version(),
                         "request target must be an absolute path");
  } else {
    response = (this->*route->serve)(call);
  }
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  if (request.method() == http::verb::head) {
    // HEAD: the headers GET would send, Content-Length included, no body.
    size_t length = response.body().size();
    response.body().clear();
    response.content_length(length);
  }
  // Probes come every few seconds: apart, or they would be most of "page".
  const std::string label = call.path == kHealthPath || call.path == kLivePath
                                ? std::string(call.path)
                                : RouteLabel(call.path);
  request_metrics_.Observe(
      label, MethodLabel(request.method()),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  return response;
}

HttpResponse HttpRouter::ServeProbe(const Call& call) const {
  const absl::Status health =
      call.path == kHealthPath ? view_->Health() : absl::OkStatus();
  HttpResponse response = MakeResponse(
      health.ok() ? http::status::ok : http::status::service_unavailable,
      call.version, "text/plain; charset=utf-8",
      health.ok() ? std::string("ok\n") : absl::StrCat(health.message(), "\n"));
  response.set(http::field::cache_control, "no-store");
  return response;
}

HttpResponse HttpRouter::ServeMetrics(const Call& call) const {
  if (!call.query.empty()) {
    return TextError(http::status::bad_request, call.version,
                     "/metrics takes no query parameters");
  }
  HttpResponse response =
      MakeResponse(http::status::ok, call.version, kMetricsType,
                   view_->MetricsText() + request_metrics_.Text());
  response.set(http::field::cache_control, "no-store");
  return response;
}

HttpResponse HttpRouter::ServeLeaderboard(const Call& call) const {
  auto params =
      ParseQuery(call.query, {"workload", "config", "level", "ranked", "sort",
                              "order", "limit", "offset", "submission"});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  auto request = ParseLeaderboardQuery(*params);
  if (!request.ok()) return JsonErrorFor(request.status(), call.version);
  return JsonOf(view_->Leaderboard(*request), call.version);
}

HttpResponse HttpRouter::ServeRuns(const Call& call) const {
  auto params = ParseQuery(
      call.query, {"name", "workload", "config", "state", "limit", "before",
                   "user", "queue", "since", "until", "submission"});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  auto request = ParseListRunsQuery(*params);
  if (!request.ok()) return JsonErrorFor(request.status(), call.version);
  return JsonOf(view_->ListRuns(*request), call.version);
}

HttpResponse HttpRouter::ServeHistory(const Call& call) const {
  auto params = ParseQuery(call.query, {"name"});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  auto name = params->find("name");
  if (name == params->end() || name->second.empty()) {
    return JsonError(http::status::bad_request, call.version,
                     "query parameter 'name' is required: the spec name "
                     "whose runs to show");
  }
  v1::ListRunsRequest request;
  request.set_name(name->second);
  request.set_limit(kMaxRunsLimit);
  auto runs = ComputedRuns(*view_, request);
  if (!runs.ok()) return JsonErrorFor(runs.status(), call.version);
  return JsonBody(RunHistoryJson(name->second, *runs), call.version);
}

HttpResponse HttpRouter::ServeScaling(const Call& call) const {
  auto params = ParseQuery(call.query, {"system", "workload", "sweep"});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  const std::string system = (*params)["system"];
  const std::string workload = (*params)["workload"];
  const std::string sweep = (*params)["sweep"];
  if (system.empty() || workload.empty()) {
    return JsonError(http::status::bad_request, call.version,
                     "query parameters 'system' and 'workload' are required");
  }
  v1::ListRunsRequest request;
  request.set_workload(workload);
  request.set_state(v1::RUN_STATE_SUCCEEDED);
  auto runs = ComputedRuns(*view_, request);
  if (!runs.ok()) return JsonErrorFor(runs.status(), call.version);
  // One events read per run drawn: the time split is in the ranks' epochs.
  std::map<int64_t, v1::RunRanksResponse> ranks;
  for (const v1::Run& run : *runs) {
    if (!CountsForScaling(run, system, workload, sweep)) continue;
    absl::StatusOr<v1::RunRanksResponse> rows = view_->RunRanks(run.id());
    if (rows.ok()) ranks.emplace(run.id(), *std::move(rows));
  }
  return JsonBody(RunScalingJson(system, workload, sweep, *runs, ranks),
                  call.version);
}

HttpResponse HttpRouter::ServeIndex(const Call& call) const {
  auto params = ParseQuery(call.query, {});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  auto runs = ComputedRuns(*view_, v1::ListRunsRequest());
  if (!runs.ok()) return JsonErrorFor(runs.status(), call.version);
  return JsonBody(call.path == "/api/v1/index/systems" ? SystemsIndexJson(*runs)
                                                       : SeriesIndexJson(*runs),
                  call.version);
}

HttpResponse HttpRouter::ServeChanges(const Call& call) const {
  auto params =
      ParseQuery(call.query, {"name", "series", "since", "regressions"});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  absl::StatusOr<v1::ListChangesRequest> request =
      ParseListChangesQuery(*params);
  if (!request.ok()) return JsonErrorFor(request.status(), call.version);
  return JsonOf(view_->ListChanges(*request), call.version);
}

HttpResponse HttpRouter::ServeNodes(const Call& call) const {
  auto params = ParseQuery(call.query, {});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  return JsonOf(view_->ListNodes(), call.version);
}

HttpResponse HttpRouter::ServeRun(const Call& call) const {
  constexpr absl::string_view kRunsPrefix = "/api/v1/runs/";
  const absl::string_view encoded = call.path.substr(kRunsPrefix.size());
  if (encoded.empty()) return NoSuchApiRoute(call);
  auto params = ParseQuery(call.query, {});
  if (!params.ok()) return JsonErrorFor(params.status(), call.version);
  auto decoded = PercentDecode(encoded, /*plus_is_space=*/false);
  if (!decoded.ok()) return JsonErrorFor(decoded.status(), call.version);
  const std::string& route = *decoded;
  const unsigned version = call.version;
  // ID | ID/ranks | ID/attempts/N/ranks/R/(events|stderr)
  const std::vector<absl::string_view> parts = absl::StrSplit(route, '/');
  auto id = ParseRunId(parts[0]);
  if (!id.ok()) return JsonErrorFor(id.status(), version);
  if (parts.size() == 1) return JsonOf(view_->GetRun(*id), version);
  if (parts.size() == 2 && parts[1] == "ranks") {
    return JsonOf(view_->RunRanks(*id), version);
  }
  int attempt = 0, rank = -1;
  if (parts.size() != 6 || parts[1] != "attempts" || parts[3] != "ranks" ||
      (parts[5] != "events" && parts[5] != "stderr")) {
    return JsonError(http::status::not_found, version,
                     absl::StrCat("no such API route: ", kRunsPrefix, route));
  }
  if (!absl::SimpleAtoi(parts[2], &attempt) || attempt < 1 ||
      !absl::SimpleAtoi(parts[4], &rank) || rank < 0) {
    return JsonError(
        http::status::bad_request, version,
        absl::StrCat("attempt must be a positive integer and rank a "
                     "non-negative one, got attempt '",
                     parts[2], "' rank '", parts[4], "'"));
  }
  const bool events = parts[5] == "events";
  absl::StatusOr<std::string> text =
      view_->RankLogText(*id, attempt, rank,
                         events ? CoordinatorView::RankLog::kEvents
                                : CoordinatorView::RankLog::kStderr);
  if (!text.ok()) return JsonErrorFor(text.status(), version);
  HttpResponse response = MakeResponse(http::status::ok, version,
                                       "text/plain; charset=utf-8", *text);
  response.set(http::field::cache_control, "no-store");
  response.set(http::field::content_disposition,
               absl::StrCat("attachment; filename=\"run-", *id, "-attempt-",
                            attempt, "-rank-", rank, "-", parts[5], ".txt\""));
  return response;
}

HttpResponse HttpRouter::NoSuchApiRoute(const Call& call) const {
  return JsonError(http::status::not_found, call.version,
                   absl::StrCat("no such API route: ", call.path));
}

HttpResponse HttpRouter::ServeFile(const Call& call) const {
  return files_.Serve(call.path, call.version);
}

}  // namespace hpcai500
