// The leaderboard (ARCHITECTURE.md, "Repetitions"): one row per submission
// whose every run succeeded with a score, its Valid FLOPS aggregated over the
// repetitions, grouped by (workload, config) and ranked within each group,
// ranked rows first, best Valid FLOPS first. Pure logic over stored runs: no
// store, no lock.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_LEADERBOARD_H_
#define HPCAI500_SERVER_LEADERBOARD_H_

#include <vector>

#include "absl/status/status.h"
#include "common/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// OK when the request's workload and config filters name what `registry`
// knows (an empty filter matches all); InvalidArgument naming the unknown
// one otherwise.
absl::Status ValidateLeaderboardRequest(const v1::LeaderboardRequest& request,
                                        const Registry& registry);

// The leaderboard of `runs` (any order, any state) under the request's
// workload and config filters. A submission is listed once it has all its
// repetitions and every one succeeded with a score.
v1::LeaderboardResponse BuildLeaderboard(const std::vector<v1::Run>& runs,
                                         const v1::LeaderboardRequest& request);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_LEADERBOARD_H_
