#include "server/store/internal/store_queries.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "server/store/leaderboard.h"

namespace hpcai500::server_internal {
namespace {

// "WHERE a AND b " or "" for no condition.
std::string WhereClause(const std::vector<std::string>& conditions) {
  if (conditions.empty()) return "";
  return absl::StrCat("WHERE ", absl::StrJoin(conditions, " AND "), " ");
}

// The leaderboard request's filters (workload, config, level, ranked,
// submission), as conditions on
// the leaderboard table with their text parameters.
std::vector<std::string> LeaderboardFilters(
    const v1::LeaderboardRequest& request, std::vector<std::string>& params) {
  std::vector<std::string> conditions;
  if (!request.workload().empty()) {
    params.push_back(request.workload());
    conditions.push_back(absl::StrCat("workload = ?", params.size()));
  }
  if (!request.config().empty()) {
    params.push_back(request.config());
    conditions.push_back(absl::StrCat("config = ?", params.size()));
  }
  if (!request.level().empty()) {
    params.push_back(request.level());
    conditions.push_back(absl::StrCat("level = ?", params.size()));
  }
  if (!request.ranked().empty()) {
    conditions.push_back(
        absl::StrCat("unranked = ", request.ranked() == kRankedFilter ? 0 : 1));
  }
  if (request.submission_id() > 0) {
    conditions.push_back(
        absl::StrCat("submission_id = ", request.submission_id()));
  }
  return conditions;
}

// SELECT `columns_from` (the columns, then FROM and the table) of the rows
// whose run_id is one of `run_ids`, then `order`.
std::string RowsOfRunsSql(absl::string_view columns_from,
                          const std::vector<int64_t>& run_ids,
                          absl::string_view order) {
  return absl::StrCat("SELECT ", columns_from, " WHERE run_id IN (",
                      absl::StrJoin(run_ids, ","), ")", order);
}

}  // namespace

SqlQuery ListRunsQuery(const v1::ListRunsRequest& filter) {
  SqlQuery query;
  std::vector<std::string> conditions;
  auto match_text = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    query.text_params.push_back(value);
    conditions.push_back(
        absl::StrCat(column, " = ?", query.text_params.size()));
  };
  match_text("name", filter.name());
  match_text("workload", filter.workload());
  match_text("config", filter.config());
  match_text("user", filter.user());
  match_text("queue", filter.queue());
  if (filter.state() != v1::RUN_STATE_UNSPECIFIED) {
    conditions.push_back(
        absl::StrCat("state = ", static_cast<int>(filter.state())));
  }
  if (filter.since_ms() > 0) {
    conditions.push_back(absl::StrCat("created_ms >= ", filter.since_ms()));
  }
  if (filter.until_ms() > 0) {
    conditions.push_back(absl::StrCat("created_ms < ", filter.until_ms()));
  }
  if (filter.before_id() > 0) {
    conditions.push_back(absl::StrCat("id < ", filter.before_id()));
  }
  if (filter.submission_id() > 0) {
    conditions.push_back(
        absl::StrCat("submission_id = ", filter.submission_id()));
  }
  if (conditions.empty() || filter.limit() <= 0) {
    query.sql =
        absl::StrCat(kRunColumns, WhereClause(conditions), "ORDER BY id DESC");
    if (filter.limit() > 0) {
      absl::StrAppend(&query.sql, " LIMIT ", filter.limit());
    }
    return query;
  }
  // The page's ids first, from an index alone where one covers the filter
  // (runs_by_user, runs_by_name), then only those rows: sorting the whole
  // rows (spec, epochs) of every match by id was 20-50x slower for one user
  // of 100,000 runs.
  query.sql = absl::StrCat(kRunColumns, "WHERE id IN (SELECT id FROM runs ",
                           WhereClause(conditions), "ORDER BY id DESC LIMIT ",
                           filter.limit(), ") ORDER BY id DESC");
  return query;
}

std::string AttemptsOfRunsSql(const std::vector<int64_t>& run_ids) {
  return RowsOfRunsSql(
      "run_id, number, state, nodes, master_addr, master_port, started_ms, "
      "finished_ms, error, resume_from_attempt, resume_from_epoch, "
      "resumed_epoch, inventory FROM attempts",
      run_ids, " ORDER BY run_id, number");
}

std::string ScoresOfRunsSql(const std::vector<int64_t>& run_ids) {
  return RowsOfRunsSql(
      "run_id, quality, target, exponent, forward_flops_per_sample, samples, "
      "train_seconds, eval_seconds, flops, valid_flops, reached_target, "
      "convention, energy_joules, valid_flops_per_watt, lost_seconds FROM "
      "results",
      run_ids, "");
}

SqlQuery LeaderboardPageQuery(const v1::LeaderboardRequest& request) {
  SqlQuery query;
  const std::vector<std::string> conditions =
      LeaderboardFilters(request, query.text_params);
  query.sql = absl::StrCat(
      "SELECT submission_id, workload, config, unranked, valid_flops, row "
      "FROM leaderboard ",
      WhereClause(conditions),
      "ORDER BY workload, config, unranked, valid_flops DESC, submission_id");
  if (request.limit() > 0 || request.offset() > 0) {
    // SQLite takes LIMIT -1 for "no limit" when only an offset is given.
    absl::StrAppend(&query.sql, " LIMIT ",
                    request.limit() > 0 ? request.limit() : -1, " OFFSET ",
                    request.offset());
  }
  return query;
}

SqlQuery LeaderboardCountQuery(const v1::LeaderboardRequest& request) {
  SqlQuery query;
  const std::vector<std::string> conditions =
      LeaderboardFilters(request, query.text_params);
  query.sql = absl::StrCat("SELECT COUNT(*) FROM leaderboard ",
                           WhereClause(conditions));
  return query;
}

}  // namespace hpcai500::server_internal
