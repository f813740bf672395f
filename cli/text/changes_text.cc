// What `hpcai500 changes` prints: see changes_text.h.
#include "cli/text/changes_text.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/text/format.h"

namespace hpcai500 {
namespace {

std::string ChangeSize(const v1::ChangePoint& change) {
  return absl::StrFormat("%+.1f%% [%+.1f%%, %+.1f%%]", change.change_pct(),
                         change.change_pct_low(), change.change_pct_high());
}

std::string ChangeKind(const v1::ChangePoint& change) {
  return absl::StrCat(change.regression() ? "regression" : "improvement", ", ",
                      change.gradual() ? "drift" : "step");
}

}  // namespace

std::string FormatChangeLine(const v1::ChangePoint& change) {
  return absl::StrCat(change.metric(), " ", ChangeSize(change), " at run ",
                      change.run_id(), " (", ChangeKind(change),
                      "): ", change.attribution());
}

std::string FormatChanges(const v1::ListChangesResponse& changes,
                          absl::TimeZone zone) {
  if (changes.changes().empty()) return "no change points\n";
  std::vector<std::vector<std::string>> rows;
  for (const v1::ChangePoint& change : changes.changes()) {
    rows.push_back(
        {change.name(), change.metric(), absl::StrCat(change.run_id()),
         FormatTimeMs(change.finished_ms(), zone), ChangeSize(change),
         ChangeKind(change), change.attribution()});
  }
  return FormatTable({"name", "metric", "run", "finished",
                      "change [95% interval]", "kind", "what changed"},
                     rows, /*right_aligned=*/{2});
}

}  // namespace hpcai500
