#include "server/http/router.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "common/run_state.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "server/http/run_history.h"
#include "server/http/run_scaling.h"

namespace hpcai500 {
namespace {

namespace http = boost::beast::http;
namespace fs = std::filesystem;

constexpr absl::string_view kApiPrefix = "/api/v1/";
constexpr char kJsonType[] = "application/json";
constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr int kDefaultRunsLimit = 100;
constexpr int kMaxRunsLimit = 1000;
// The runs a page computed here reads at most (the coordinator's cap).
constexpr int kComputedRunsLimit = 10'000;
// The page's files are small; anything bigger is not ours to serve.
constexpr std::uintmax_t kMaxStaticFileBytes = 8 << 20;

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

HttpResponse TextError(http::status status, unsigned version,
                       absl::string_view message) {
  return MakeResponse(status, version, "text/plain; charset=utf-8",
                      absl::StrCat(message, "\n"));
}

// 200 with `json`, a JSON document, never cached.
HttpResponse JsonBody(std::string json, unsigned version) {
  HttpResponse response =
      MakeResponse(http::status::ok, version, kJsonType, std::move(json));
  response.set(http::field::cache_control, "no-store");
  return response;
}

// The message as JSON with proto field names and every primitive field.
HttpResponse JsonOf(const google::protobuf::Message& message,
                    unsigned version) {
  absl::StatusOr<std::string> json = ProtoToJson(message, /*indent=*/false);
  if (!json.ok()) {
    return JsonError(http::status::internal_server_error, version,
                     json.status().message());
  }
  return JsonBody(*std::move(json), version);
}

template <typename T>
HttpResponse JsonOf(const absl::StatusOr<T>& result, unsigned version) {
  if (!result.ok()) return JsonErrorFor(result.status(), version);
  return JsonOf(*result, version);
}

using QueryParams = std::map<std::string, std::string>;

// Parses "a=1&b=x" and refuses parameters outside `allowed` and repeated
// ones, so that a misspelt filter is an error rather than ignored.
absl::StatusOr<QueryParams> ParseQuery(
    absl::string_view query, std::initializer_list<absl::string_view> allowed) {
  QueryParams params;
  for (absl::string_view pair : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    auto key = PercentDecode(kv.first, /*plus_is_space=*/true);
    if (!key.ok()) return key.status();
    auto value = PercentDecode(kv.second, /*plus_is_space=*/true);
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query parameter '", *key, "': ", value.status().message()));
    }
    if (std::find(allowed.begin(), allowed.end(), *key) == allowed.end()) {
      std::string names;
      for (absl::string_view name : allowed) {
        absl::StrAppend(&names, names.empty() ? "" : ", ", name);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown query parameter '", *key, "'",
          names.empty() ? " (this route takes none)"
                        : absl::StrCat(" (expected: ", names, ")")));
    }
    if (!params.emplace(*key, *value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter '", *key, "' given twice"));
    }
  }
  return params;
}

absl::StatusOr<int> ParseLimit(const QueryParams& params) {
  auto it = params.find("limit");
  if (it == params.end()) return kDefaultRunsLimit;
  int limit = 0;
  if (!absl::SimpleAtoi(it->second, &limit) || limit < 1 ||
      limit > kMaxRunsLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter 'limit': must be an integer between 1 "
                     "and ",
                     kMaxRunsLimit, ", got '", it->second, "'"));
  }
  return limit;
}

absl::StatusOr<int64_t> ParseRunId(absl::string_view text) {
  int64_t id = 0;
  bool digits_only = !text.empty() && text.size() <= 18 &&
                     std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
  if (!digits_only || !absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run id must be a positive integer, got '", text, "'"));
  }
  return id;
}

// "state=running": a state by the lower-case name the CLI prints.
absl::StatusOr<v1::RunState> ParseStateParam(const std::string& text) {
  absl::StatusOr<v1::RunState> state = ParseRunStateName(text);
  if (!state.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter 'state': ", state.status().message()));
  }
  return state;
}

// The query parameter `submission`: a positive id, else InvalidArgument.
absl::StatusOr<int64_t> ParseSubmissionParam(absl::string_view value) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(value, &id) || id <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query parameter 'submission': must be a positive integer, got '",
        value, "'"));
  }
  return id;
}

// GET /api/v1/runs's query as a ListRunsRequest (since and until in Unix
// ms, as `hpcai500 history --json` prints them); InvalidArgument naming a
// parameter with a bad value.
absl::StatusOr<v1::ListRunsRequest> ParseListRunsQuery(
    const QueryParams& params) {
  v1::ListRunsRequest request;
  auto limit = ParseLimit(params);
  if (!limit.ok()) return limit.status();
  request.set_limit(*limit);
  for (const auto& [key, value] : params) {
    if (key == "name") request.set_name(value);
    if (key == "workload") request.set_workload(value);
    if (key == "config") request.set_config(value);
    if (key == "user") request.set_user(value);
    if (key == "queue") request.set_queue(value);
    if (key == "since" || key == "until") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "query parameter '", key,
            "': must be a time in Unix milliseconds, got '", value, "'"));
      }
      key == "since" ? request.set_since_ms(ms) : request.set_until_ms(ms);
    }
    if (key == "state") {
      auto state = ParseStateParam(value);
      if (!state.ok()) return state.status();
      request.set_state(*state);
    }
    if (key == "submission") {
      ASSIGN_OR_RETURN(const int64_t id, ParseSubmissionParam(value));
      request.set_submission_id(id);
    }
    if (key == "before") {
      auto id = ParseRunId(value);
      if (!id.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("query parameter 'before': ", id.status().message()));
      }
      request.set_before_id(*id);
    }
  }
  return request;
}

// GET /api/v1/leaderboard's query as a LeaderboardRequest: workload,
// config, level, ranked, submission (its one row), the order (sort=COLUMN,
// order=asc|desc) and the page (limit, absent or 0 for every row; offset).
// InvalidArgument naming a page parameter that is not a non-negative integer or
// an order that is neither asc nor desc; the coordinator checks the rest.
absl::StatusOr<v1::LeaderboardRequest> ParseLeaderboardQuery(
    const QueryParams& params) {
  v1::LeaderboardRequest request;
  for (const auto& [key, value] : params) {
    if (key == "workload") request.set_workload(value);
    if (key == "config") request.set_config(value);
    if (key == "level") request.set_level(value);
    if (key == "ranked") request.set_ranked(value);
    if (key == "sort") request.set_sort(value);
    if (key == "submission") {
      ASSIGN_OR_RETURN(const int64_t id, ParseSubmissionParam(value));
      request.set_submission_id(id);
    }
    if (key == "order") {
      if (value != "asc" && value != "desc") {
        return absl::InvalidArgumentError(absl::StrCat(
            "query parameter 'order': must be asc or desc, got '", value, "'"));
      }
      request.set_ascending(value == "asc");
    }
    if (key != "limit" && key != "offset") continue;
    int number = 0;
    if (!absl::SimpleAtoi(value, &number) || number < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("query parameter '", key,
                       "': must be a non-negative integer, got '", value, "'"));
    }
    if (key == "limit") request.set_limit(number);
    if (key == "offset") request.set_offset(number);
  }
  return request;
}

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

bool IsInside(const fs::path& dir, const fs::path& candidate) {
  auto [dir_end, unused] =
      std::mismatch(dir.begin(), dir.end(), candidate.begin(), candidate.end());
  return dir_end == dir.end();
}

fs::path CanonicalDir(const std::string& dir) {
  std::error_code error;
  fs::path canonical = fs::canonical(dir, error);
  if (error || !fs::is_directory(canonical, error)) return {};
  return canonical;
}

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

absl::StatusOr<std::string> PercentDecode(absl::string_view text,
                                          bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c != '%') {
      out.push_back(c);
    } else {
      int value = 0;
      if (i + 2 >= text.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("malformed percent escape at offset ", i));
      }
      absl::string_view hex = text.substr(i + 1, 2);
      if (!absl::ascii_isxdigit(hex[0]) || !absl::ascii_isxdigit(hex[1]) ||
          !absl::SimpleHexAtoi(hex, &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("malformed percent escape at offset ", i));
      }
      out.push_back(static_cast<char>(value));
      i += 2;
    }
  }
  if (out.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("NUL character in the request");
  }
  return out;
}

absl::string_view ContentTypeForPath(absl::string_view path) {
  static const auto* const kTypes =
      new std::map<absl::string_view, absl::string_view>{
          {".html", "text/html; charset=utf-8"},
          {".js", "text/javascript; charset=utf-8"},
          {".mjs", "text/javascript; charset=utf-8"},
          {".css", "text/css; charset=utf-8"},
          {".json", "application/json"},
          {".svg", "image/svg+xml"},
          {".png", "image/png"},
          {".ico", "image/x-icon"},
          {".txt", "text/plain; charset=utf-8"},
      };
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot != absl::string_view::npos &&
      (slash == absl::string_view::npos || dot > slash)) {
    auto it = kTypes->find(path.substr(dot));
    if (it != kTypes->end()) return it->second;
  }
  return "application/octet-stream";
}

HttpRouter::HttpRouter(CoordinatorView* view, std::string web_dir)
    : view_(view), web_dir_(CanonicalDir(web_dir)) {}

namespace {

// The token a request shows: "Authorization: Bearer T", else the cookie
// hpcai500_token=T; "" when none.
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

// 401 (no or a bad token) or 403 (a role that may not read): JSON under
// /api/ and /metrics; elsewhere a page that asks for a viewer token and
// keeps it in a cookie (set by the page itself: the server changes nothing).
HttpResponse Refusal(const absl::Status& why, const HttpRequest& request) {
  const http::status status = absl::IsPermissionDenied(why)
                                  ? http::status::forbidden
                                  : http::status::unauthorized;
  absl::string_view target(request.target().data(), request.target().size());
  if (absl::StartsWith(target, "/api/") ||
      absl::StartsWith(target, "/metrics")) {
    HttpResponse response{status, request.version()};
    response.set(http::field::content_type, "application/json");
    response.set(http::field::www_authenticate, "Bearer");
    response.body() =
        nlohmann::json{{"error", std::string(why.message())}}.dump();
    return response;
  }
  HttpResponse response{status, request.version()};
  response.set(http::field::content_type, "text/html; charset=utf-8");
  response.set(http::field::www_authenticate, "Bearer");
  response.body() = R"(<!doctype html><meta charset="utf-8">
<meta name="viewport" content="width=device-width">
<title>hpcai500: sign in</title>
<main style="font:16px system-ui;max-width:30em;margin:3em auto">
<h1>hpcai500</h1><p>This leaderboard needs a viewer token
(<code>hpcai500d token create --role viewer</code>).</p>
<form id="f"><input id="t" size="40" autocomplete="off"
placeholder="hai5_..."> <button>Sign in</button></form></main>
<script>document.getElementById('f').onsubmit=function(e){e.preventDefault();
document.cookie='hpcai500_token='+encodeURIComponent(
document.getElementById('t').value.trim())+'; path=/; SameSite=Strict';
location.reload();};</script>
)";
  return response;
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

HttpResponse HttpRouter::Handle(const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse response;
  if (request.method() != http::verb::get &&
      request.method() != http::verb::head) {
    response = TextError(http::status::method_not_allowed, request.version(),
                         "method not allowed: use GET or HEAD");
    response.set(http::field::allow, "GET, HEAD");
  } else if (const absl::string_view target(request.target().data(),
                                            request.target().size());
             target == kLivePath || target == kHealthPath) {
    const absl::Status health =
        target == kHealthPath ? view_->Health() : absl::OkStatus();
    response = MakeResponse(
        health.ok() ? http::status::ok : http::status::service_unavailable,
        request.version(), "text/plain; charset=utf-8",
        health.ok() ? std::string("ok\n")
                    : absl::StrCat(health.message(), "\n"));
    response.set(http::field::cache_control, "no-store");
  } else if (absl::Status allowed = view_->AuthorizeRead(RequestToken(request));
             !allowed.ok()) {
    response = Refusal(allowed, request);
  } else {
    response = Route(request);
  }
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  if (request.method() == http::verb::head) {
    // HEAD: the headers GET would send, Content-Length included, no body.
    size_t length = response.body().size();
    response.body().clear();
    response.content_length(length);
  }
  absl::string_view target(request.target().data(), request.target().size());
  const absl::string_view path = target.substr(0, target.find('?'));
  // Probes come every few seconds: apart, or they would be most of "page".
  const std::string route = path == kHealthPath || path == kLivePath
                                ? std::string(path)
                                : RouteLabel(path);
  request_metrics_.Observe(
      route, MethodLabel(request.method()),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  return response;
}

HttpResponse HttpRouter::Route(const HttpRequest& request) const {
  absl::string_view target(request.target().data(), request.target().size());
  unsigned version = request.version();
  if (target.empty() || target.front() != '/') {
    return TextError(http::status::bad_request, version,
                     "request target must be an absolute path");
  }
  size_t question = target.find('?');
  absl::string_view path = target.substr(0, question);
  absl::string_view query = question == absl::string_view::npos
                                ? absl::string_view()
                                : target.substr(question + 1);
  if (absl::StartsWith(path, kApiPrefix)) {
    return ServeApi(path, query, version);
  }
  if (path == "/metrics") {
    if (!query.empty()) {
      return TextError(http::status::bad_request, version,
                       "/metrics takes no query parameters");
    }
    HttpResponse response =
        MakeResponse(http::status::ok, version, kMetricsType,
                     view_->MetricsText() + request_metrics_.Text());
    response.set(http::field::cache_control, "no-store");
    return response;
  }
  return ServeStatic(path, version);
}

HttpResponse HttpRouter::ServeApi(absl::string_view path,
                                  absl::string_view query,
                                  unsigned version) const {
  absl::string_view route = path.substr(kApiPrefix.size());
  if (route == "leaderboard") {
    auto params =
        ParseQuery(query, {"workload", "config", "level", "ranked", "sort",
                           "order", "limit", "offset", "submission"});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    auto request = ParseLeaderboardQuery(*params);
    if (!request.ok()) return JsonErrorFor(request.status(), version);
    return JsonOf(view_->Leaderboard(*request), version);
  }
  if (route == "runs") {
    auto params = ParseQuery(
        query, {"name", "workload", "config", "state", "limit", "before",
                "user", "queue", "since", "until", "submission"});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    auto request = ParseListRunsQuery(*params);
    if (!request.ok()) return JsonErrorFor(request.status(), version);
    return JsonOf(view_->ListRuns(*request), version);
  }
  if (route == "history") {
    auto params = ParseQuery(query, {"name"});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    auto name = params->find("name");
    if (name == params->end() || name->second.empty()) {
      return JsonError(http::status::bad_request, version,
                       "query parameter 'name' is required: the spec name "
                       "whose runs to show");
    }
    v1::ListRunsRequest request;
    request.set_name(name->second);
    request.set_limit(kMaxRunsLimit);
    auto runs = ComputedRuns(*view_, request);
    if (!runs.ok()) return JsonErrorFor(runs.status(), version);
    return JsonBody(RunHistoryJson(name->second, *runs), version);
  }
  if (route == "scaling") return ServeScaling(query, version);
  if (route == "index/systems" || route == "index/series") {
    auto params = ParseQuery(query, {});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    auto runs = ComputedRuns(*view_, v1::ListRunsRequest());
    if (!runs.ok()) return JsonErrorFor(runs.status(), version);
    return JsonBody(route == "index/systems" ? SystemsIndexJson(*runs)
                                             : SeriesIndexJson(*runs),
                    version);
  }
  if (absl::ConsumePrefix(&route, "runs/") && !route.empty()) {
    auto params = ParseQuery(query, {});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    auto decoded = PercentDecode(route, /*plus_is_space=*/false);
    if (!decoded.ok()) return JsonErrorFor(decoded.status(), version);
    return ServeRun(*decoded, version);
  }
  if (route == "nodes") {
    auto params = ParseQuery(query, {});
    if (!params.ok()) return JsonErrorFor(params.status(), version);
    return JsonOf(view_->ListNodes(), version);
  }
  return JsonError(http::status::not_found, version,
                   absl::StrCat("no such API route: ", path));
}

HttpResponse HttpRouter::ServeScaling(absl::string_view query,
                                      unsigned version) const {
  auto params = ParseQuery(query, {"system", "workload", "sweep"});
  if (!params.ok()) return JsonErrorFor(params.status(), version);
  const std::string system = (*params)["system"];
  const std::string workload = (*params)["workload"];
  const std::string sweep = (*params)["sweep"];
  if (system.empty() || workload.empty()) {
    return JsonError(http::status::bad_request, version,
                     "query parameters 'system' and 'workload' are required");
  }
  v1::ListRunsRequest request;
  request.set_workload(workload);
  request.set_state(v1::RUN_STATE_SUCCEEDED);
  auto runs = ComputedRuns(*view_, request);
  if (!runs.ok()) return JsonErrorFor(runs.status(), version);
  // One events read per run drawn: the time split is in the ranks' epochs.
  std::map<int64_t, v1::RunRanksResponse> ranks;
  for (const v1::Run& run : *runs) {
    if (!CountsForScaling(run, system, workload, sweep)) continue;
    absl::StatusOr<v1::RunRanksResponse> rows = view_->RunRanks(run.id());
    if (rows.ok()) ranks.emplace(run.id(), *std::move(rows));
  }
  return JsonBody(RunScalingJson(system, workload, sweep, *runs, ranks),
                  version);
}

HttpResponse HttpRouter::ServeRun(absl::string_view route,
                                  unsigned version) const {
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
                     absl::StrCat("no such API route: /api/v1/runs/", route));
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

absl::StatusOr<fs::path> HttpRouter::ResolveStaticPath(
    absl::string_view url_path) const {
  auto decoded = PercentDecode(url_path, /*plus_is_space=*/false);
  if (!decoded.ok()) return decoded.status();
  absl::Status not_found =
      absl::NotFoundError(absl::StrCat("no such file: ", url_path));
  if (web_dir_.empty() || decoded->empty() || decoded->front() != '/') {
    return not_found;
  }
  std::string relative = decoded->substr(1);
  if (relative.empty()) relative = "index.html";
  // Refuse what could leave web_dir before touching the disk: "..", a
  // second leading slash (an absolute path) and Windows separators.
  fs::path relative_path(relative);
  if (relative_path.is_absolute() || relative.find('\\') != std::string::npos) {
    return not_found;
  }
  // web/node_modules holds the browser tests' packages, not the page.
  for (const fs::path& part : relative_path) {
    if (part == ".." || part == "node_modules") return not_found;
  }
  // Then resolve symlinks and check again that the file lies inside.
  std::error_code error;
  fs::path canonical = fs::canonical(web_dir_ / relative_path, error);
  if (error || !IsInside(web_dir_, canonical) ||
      !fs::is_regular_file(canonical, error)) {
    return not_found;
  }
  return canonical;
}

HttpResponse HttpRouter::ServeStatic(absl::string_view path,
                                     unsigned version) const {
  auto file = ResolveStaticPath(path);
  if (!file.ok()) {
    return TextError(HttpStatusFor(file.status()), version,
                     file.status().message());
  }
  std::error_code error;
  std::uintmax_t size = fs::file_size(*file, error);
  if (error || size > kMaxStaticFileBytes) {
    return TextError(http::status::internal_server_error, version,
                     absl::StrCat("cannot serve ", path));
  }
  std::ifstream in(*file, std::ios::binary);
  std::ostringstream body;
  body << in.rdbuf();
  if (!in) {
    return TextError(http::status::internal_server_error, version,
                     absl::StrCat("cannot read ", path));
  }
  HttpResponse response =
      MakeResponse(http::status::ok, version,
                   ContentTypeForPath(file->string()), std::move(body).str());
  response.set(http::field::cache_control, "no-cache");
  if (absl::EndsWith(file->string(), ".html")) {
    response.set("Content-Security-Policy", "default-src 'self'");
  }
  return response;
}

}  // namespace hpcai500
