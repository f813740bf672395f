// The whole leaderboard from every run: see reference_leaderboard.h.
#include "tests/server/store/reference_leaderboard.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "server/store/leaderboard.h"

namespace hpcai500 {
namespace {

bool MatchesFilters(const v1::LeaderboardRow& row,
                    const v1::LeaderboardRequest& request) {
  return (request.workload().empty() || row.workload() == request.workload()) &&
         (request.config().empty() || row.config() == request.config()) &&
         (request.level().empty() || row.level() == request.level()) &&
         (request.ranked().empty() ||
          row.ranked() == (request.ranked() == kRankedFilter));
}

// Ranked rows first, each part by Valid FLOPS, best first.
void RankRows(std::vector<v1::LeaderboardRow>& rows) {
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const v1::LeaderboardRow& a, const v1::LeaderboardRow& b) {
        if (a.ranked() != b.ranked()) return a.ranked();
        if (a.valid_flops() != b.valid_flops()) {
          return a.valid_flops() > b.valid_flops();
        }
        return a.submission_id() < b.submission_id();
      });
  int rank = 0;
  for (v1::LeaderboardRow& row : rows) row.set_rank(row.ranked() ? ++rank : 0);
}

}  // namespace

v1::LeaderboardResponse BuildLeaderboard(
    const std::vector<v1::Run>& runs, const v1::LeaderboardRequest& request) {
  std::map<int64_t, std::vector<const v1::Run*>> by_submission;
  for (const v1::Run& run : runs) {
    by_submission[run.submission_id()].push_back(&run);
  }
  // (workload, config) -> rows.
  std::map<std::pair<std::string, std::string>, std::vector<v1::LeaderboardRow>>
      groups;
  for (const auto& [submission_id, members] : by_submission) {
    std::optional<v1::LeaderboardRow> row = SubmissionRow(members);
    if (!row.has_value() || !MatchesFilters(*row, request)) continue;
    groups[{row->workload(), row->config()}].push_back(*std::move(row));
  }
  v1::LeaderboardResponse response;
  for (auto& [group, rows] : groups) {
    RankRows(rows);
    for (v1::LeaderboardRow& row : rows) {
      // One submission's row keeps its rank among all the others.
      if (request.submission_id() > 0 &&
          row.submission_id() != request.submission_id()) {
        continue;
      }
      *response.add_rows() = std::move(row);
    }
  }
  response.set_total(response.rows_size());
  SortLeaderboardRows(*response.mutable_rows(), request.sort(),
                      request.ascending());
  PageLeaderboard(request, response);
  return response;
}

}  // namespace hpcai500
