// The leaderboard built from every run at once, by the rule
// server/store/leaderboard.h states: the reference that the Store's
// leaderboard table, kept row by row as runs are scored, must equal. Test
// code: hpcai500d pages through the table and never builds the whole board.
//
// Thread-safe: a free function.
#ifndef HPCAI500_TESTS_SERVER_STORE_REFERENCE_LEADERBOARD_H_
#define HPCAI500_TESTS_SERVER_STORE_REFERENCE_LEADERBOARD_H_

#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The leaderboard of `runs` (any order, any state) under the request's
// workload, config, level and ranked filters: every listed submission's
// row (SubmissionRow), ranked within its (workload, config) among the rows
// the filters keep; total is their number; ordered by request.sort() when
// set (SortLeaderboardRows); and the page from request.offset() of
// request.limit() rows (0: all) is returned (PageLeaderboard).
v1::LeaderboardResponse BuildLeaderboard(const std::vector<v1::Run>& runs,
                                         const v1::LeaderboardRequest& request);

}  // namespace hpcai500

#endif  // HPCAI500_TESTS_SERVER_STORE_REFERENCE_LEADERBOARD_H_
