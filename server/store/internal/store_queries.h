// The SQL of Store's read calls (run lists, a run's attempts and score, the
// leaderboard), built from a request. Store runs it; bench/read_bench.cc
// runs the very same text bare, beside the API, to measure what the API adds.
//
// Thread-safe: pure functions and constants.
#ifndef HPCAI500_SERVER_STORE_INTERNAL_STORE_QUERIES_H_
#define HPCAI500_SERVER_STORE_INTERNAL_STORE_QUERIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500::server_internal {

// One statement and the text bound to its parameters ?1, ?2, ... in order
// (numbers are part of the text: they come validated, never from a string).
struct SqlQuery {
  std::string sql;
  std::vector<std::string> text_params;
};

// The columns of a run as Store reads them, in this order; the statement
// goes on with WHERE / ORDER BY.
inline constexpr char kRunColumns[] =
    "SELECT id, submission_id, repetition, spec, state, created_ms, "
    "started_ms, finished_ms, error, epochs, user, invalidated_by, "
    "invalidation_reason, invalidated_ms, queue, priority, held_by FROM runs ";

// The runs matching every set field of `filter` (name, workload, config,
// state, user, queue, submission_id exactly; created in [since_ms,
// until_ms); id < before_id), newest first, at most filter.limit() (<= 0: all).
SqlQuery ListRunsQuery(const v1::ListRunsRequest& filter);

// Every attempt of the runs `run_ids`, by run then number (run_id first,
// then the columns of one attempt).
std::string AttemptsOfRunsSql(const std::vector<int64_t>& run_ids);
// The stored score of each of `run_ids` that has one (run_id first).
std::string ScoresOfRunsSql(const std::vector<int64_t>& run_ids);

// The leaderboard: one row per listed submission, in the order of
// server/store/leaderboard.h (by workload, config, ranked first, Valid FLOPS
// descending, submission id), under the request's workload, config, level
// and ranked filters (not its sort: Store sorts other orders itself). Page:
// request.offset() rows skipped, request.limit() rows (0: all). Columns:
// submission_id, workload, config, unranked, valid_flops, row (a serialized
// LeaderboardRow without its rank).
SqlQuery LeaderboardPageQuery(const v1::LeaderboardRequest& request);
// The number of rows before paging (one column).
SqlQuery LeaderboardCountQuery(const v1::LeaderboardRequest& request);
// How many ranked rows of (workload ?1, config ?2) come before a row with
// Valid FLOPS ?3 and submission id ?4: that row's rank is this + 1. The
// second counts only rows of level ?5 (a request filtered by level ranks
// within it).
inline constexpr char kRankedRowsAheadSql[] =
    "SELECT COUNT(*) FROM leaderboard WHERE workload = ?1 AND config = ?2 AND "
    "unranked = 0 AND (valid_flops > ?3 OR (valid_flops = ?3 AND "
    "submission_id < ?4))";
inline constexpr char kRankedRowsOfLevelAheadSql[] =
    "SELECT COUNT(*) FROM leaderboard WHERE workload = ?1 AND config = ?2 AND "
    "level = ?5 AND unranked = 0 AND (valid_flops > ?3 OR (valid_flops = ?3 "
    "AND submission_id < ?4))";

}  // namespace hpcai500::server_internal

#endif  // HPCAI500_SERVER_STORE_INTERNAL_STORE_QUERIES_H_
