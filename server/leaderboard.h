// The leaderboard (ARCHITECTURE.md, "Repetitions"): one row per submission
// whose every run succeeded with a score, its Valid FLOPS aggregated over the
// repetitions, grouped by (workload, config) and ranked within each group,
// ranked rows first, best Valid FLOPS first. Pure logic over stored runs: no
// store, no lock. Store keeps one SubmissionRow per listed submission in its
// leaderboard table, updated as runs are scored or invalidated, and pages
// through it; BuildLeaderboard is the same board built from every run, the
// reference the store's must equal.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_LEADERBOARD_H_
#define HPCAI500_SERVER_LEADERBOARD_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "common/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The most rows one leaderboard request may ask for.
inline constexpr int kMaxLeaderboardLimit = 10'000;

// OK when the request's workload and config filters name what `registry`
// knows (an empty filter matches all) and its page is sane (limit 0 to
// kMaxLeaderboardLimit, offset not negative); InvalidArgument naming the
// field otherwise.
absl::Status ValidateLeaderboardRequest(const v1::LeaderboardRequest& request,
                                        const Registry& registry);

// The row of one submission from all its runs (`members`, any order, at
// least one), rank unset; nullopt while it is not listed: a submission is
// listed once it has all its repetitions and every one succeeded with a
// score that no admin invalidated. A noop submission (kNoopWorkload) is
// never listed: it measures dispatch, not a benchmark.
std::optional<v1::LeaderboardRow> SubmissionRow(
    const std::vector<const v1::Run*>& members);

// The leaderboard of `runs` (any order, any state) under the request's
// workload and config filters: every listed submission's row, ranked within
// its (workload, config); total is their number, and the page from
// request.offset() of request.limit() rows (0: all) is returned.
v1::LeaderboardResponse BuildLeaderboard(const std::vector<v1::Run>& runs,
                                         const v1::LeaderboardRequest& request);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_LEADERBOARD_H_
