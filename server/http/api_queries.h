// The JSON API's inputs: percent-decoding, a query string checked against
// the parameters its route takes, and the queries of GET /api/v1/runs and
// GET /api/v1/leaderboard as the requests the coordinator answers. Every
// refusal is InvalidArgument naming the parameter, so that a misspelt
// filter is an error rather than ignored.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_HTTP_API_QUERIES_H_
#define HPCAI500_SERVER_HTTP_API_QUERIES_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The most runs GET /api/v1/runs lists at once (its `limit`), and the most
// the history page reads.
inline constexpr int kMaxRunsLimit = 1000;

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, as in query
// strings). InvalidArgument for a malformed escape or a decoded NUL.
absl::StatusOr<std::string> PercentDecode(absl::string_view text,
                                          bool plus_is_space);

// A query's parameters, decoded, by name.
using QueryParams = std::map<std::string, std::string>;

// Parses "a=1&b=x", refusing parameters outside `allowed` and repeated ones.
absl::StatusOr<QueryParams> ParseQuery(
    absl::string_view query, std::initializer_list<absl::string_view> allowed);

// A run id in a path: a positive integer of at most 18 digits.
absl::StatusOr<int64_t> ParseRunId(absl::string_view text);

// GET /api/v1/runs's query as a ListRunsRequest (since and until in Unix
// ms, as `hpcai500 history --json` prints them; limit 1 to kMaxRunsLimit,
// 100 when absent); InvalidArgument naming a parameter with a bad value.
absl::StatusOr<v1::ListRunsRequest> ParseListRunsQuery(
    const QueryParams& params);

// GET /api/v1/leaderboard's query as a LeaderboardRequest: workload,
// config, level, ranked, submission (its one row), the order (sort=COLUMN,
// order=asc|desc) and the page (limit, absent or 0 for every row; offset).
// InvalidArgument naming a page parameter that is not a non-negative
// integer or an order that is neither asc nor desc; the coordinator checks
// the rest.
absl::StatusOr<v1::LeaderboardRequest> ParseLeaderboardQuery(
    const QueryParams& params);

// GET /api/v1/changes's query as a ListChangesRequest: name, series, since
// (Unix ms, >= 0) and regressions (1 or true: regressions only; 0 or
// false). InvalidArgument naming a parameter with a bad value.
absl::StatusOr<v1::ListChangesRequest> ParseListChangesQuery(
    const QueryParams& params);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_API_QUERIES_H_
