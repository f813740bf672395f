#include "cli/leaderboard_text.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/format.h"

namespace hpcai500 {
namespace {

std::string RankText(const v1::LeaderboardRow& row) {
  return row.ranked() && row.rank() > 0 ? absl::StrCat(row.rank()) : "-";
}

}  // namespace

std::string FormatLeaderboard(const v1::LeaderboardResponse& board,
                              int offset) {
  if (board.rows_size() == 0) {
    if (board.total() > 0) {
      return absl::StrCat("no rows after the first ", offset, " (of ",
                          board.total(), ")\n");
    }
    return "no results yet\n";
  }
  std::vector<std::string> workloads;
  std::map<std::string, std::vector<std::vector<std::string>>> tables;
  for (const v1::LeaderboardRow& row : board.rows()) {
    auto [it, added] = tables.try_emplace(row.workload());
    if (added) workloads.push_back(row.workload());
    it->second.push_back({RankText(row), row.system(), row.name(), row.config(),
                          FormatFlops(row.valid_flops()),
                          FormatQualityVsTarget(row.quality(), row.target()),
                          absl::StrCat(row.runs()),
                          row.ranked() ? "ranked" : "unranked"});
  }
  std::string text;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads.size() > 1) {
      absl::StrAppend(&text, i > 0 ? "\n" : "", workloads[i], "\n");
    }
    absl::StrAppend(
        &text, FormatTable({"rank", "system", "name", "config", "Valid FLOPS",
                            "quality / target", "runs", "status"},
                           tables[workloads[i]],
                           /*right_aligned=*/{0, 4, 5, 6}));
  }
  if (board.rows_size() < board.total()) {
    absl::StrAppend(&text, "\nrows ", offset + 1, "-",
                    offset + board.rows_size(), " of ", board.total(),
                    " (--offset, --limit)\n");
  }
  return text;
}

}  // namespace hpcai500
