// The JSON API's query strings and path parts, parsed: see api_queries.h.
#include "server/http/api_queries.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/run_state.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

constexpr int kDefaultRunsLimit = 100;

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

}  // namespace

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

absl::StatusOr<v1::ListChangesRequest> ParseListChangesQuery(
    const QueryParams& params) {
  v1::ListChangesRequest request;
  for (const auto& [key, value] : params) {
    if (key == "name") request.set_name(value);
    if (key == "series") request.set_series(value);
    if (key == "since") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "query parameter 'since': must be a time in Unix milliseconds, "
            "got '",
            value, "'"));
      }
      request.set_since_ms(ms);
    }
    if (key == "regressions") {
      if (value != "1" && value != "true" && value != "0" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat(
            "query parameter 'regressions': must be 1, true, 0 or false, "
            "got '",
            value, "'"));
      }
      request.set_regressions_only(value == "1" || value == "true");
    }
  }
  return request;
}

}  // namespace hpcai500
