// What `hpcai500 leaderboard` prints (cli/text/leaderboard_text.h).
#include "cli/text/leaderboard_text.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/text/format.h"

namespace hpcai500 {
namespace {

std::string RankText(const v1::LeaderboardRow& row) {
  return row.ranked() && row.rank() > 0 ? absl::StrCat(row.rank()) : "-";
}

// The throughput CV of the repetitions ("1.4%", "3.1% !" above the
// coordinator's limit), "-" for a single run.
std::string SpreadText(const v1::LeaderboardRow& row) {
  if (row.runs() < 2) return "-";
  return absl::StrCat(absl::StrFormat("%.1f%%", 100 * row.throughput_cv()),
                      row.unrepeatable() ? " !" : "");
}

// The convergence check's verdict, with what Valid FLOPS was divided by
// ("normalized /1.08"); "-" where no reference exists.
std::string ConvergenceText(const v1::LeaderboardRow& row) {
  const v1::ConvergenceCheck& check = row.convergence();
  if (check.verdict().empty() || check.verdict() == "unchecked") return "-";
  if (check.factor() > 1) {
    return absl::StrFormat("%s /%.2f", check.verdict(), check.factor());
  }
  return check.verdict();
}

// The rows as one table per workload, in the order the workloads first
// appear, each headed by its workload when there are several.
std::string WorkloadTables(const v1::LeaderboardResponse& board) {
  std::vector<std::string> workloads;
  std::map<std::string, std::vector<std::vector<std::string>>> tables;
  for (const v1::LeaderboardRow& row : board.rows()) {
    auto [it, added] = tables.try_emplace(row.workload());
    if (added) workloads.push_back(row.workload());
    it->second.push_back({RankText(row), row.system(), row.name(), row.config(),
                          FormatFlops(row.valid_flops()),
                          FormatQualityVsTarget(row.quality(), row.target()),
                          absl::StrCat(row.runs()), SpreadText(row),
                          ConvergenceText(row),
                          row.ranked() ? "ranked" : "unranked"});
  }
  std::string text;
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads.size() > 1) {
      absl::StrAppend(&text, i > 0 ? "\n" : "", workloads[i], "\n");
    }
    absl::StrAppend(
        &text, FormatTable({"rank", "system", "name", "config", "Valid FLOPS",
                            "quality / target", "runs", "spread", "convergence",
                            "status"},
                           tables[workloads[i]],
                           /*right_aligned=*/{0, 4, 5, 6, 7}));
  }
  return text;
}

// A footnote for each mark a row of the page carries.
std::string Footnotes(const v1::LeaderboardResponse& board) {
  std::string text;
  if (std::any_of(
          board.rows().begin(), board.rows().end(),
          [](const v1::LeaderboardRow& row) { return row.unrepeatable(); })) {
    absl::StrAppend(
        &text, absl::StrFormat(
                   "\n! unrepeatable: the repetitions' throughput varies by "
                   "more than %.1f%% (or epochs to target by more than "
                   "%.1f%%)\n",
                   100 * board.throughput_cv_limit(),
                   100 * board.epochs_to_target_cv_limit()));
  }
  if (std::any_of(board.rows().begin(), board.rows().end(),
                  [](const v1::LeaderboardRow& row) {
                    return row.convergence().factor() > 1;
                  })) {
    absl::StrAppend(
        &text,
        "\n/F: Valid FLOPS normalised by the convergence check: the "
        "submission converged F times faster than the reference (in epochs "
        "to target), so its runs' Valid FLOPS is divided by F\n");
  }
  return text;
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
  std::string text = absl::StrCat(WorkloadTables(board), Footnotes(board));
  if (board.rows_size() < board.total()) {
    absl::StrAppend(&text, "\nrows ", offset + 1, "-",
                    offset + board.rows_size(), " of ", board.total(),
                    " (--offset, --limit)\n");
  }
  return text;
}

}  // namespace hpcai500
