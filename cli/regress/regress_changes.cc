// What `regress` says of a verdict beside the series' change points: see
// regress_changes.h.
#include "cli/regress/regress_changes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cli/text/changes_text.h"

namespace hpcai500 {

ChangeContext ChangeContextOf(const std::vector<v1::ChangePoint>& changes,
                              RegressMetric metric,
                              const std::vector<int64_t>& run_ids, int window) {
  const std::string name = RegressMetricName(metric);
  const int64_t first =
      run_ids.empty() ? 0 : *std::min_element(run_ids.begin(), run_ids.end());
  const v1::ChangePoint* newest_before = nullptr;
  for (const v1::ChangePoint& change : changes) {
    if (change.metric() != name) continue;
    if (std::find(run_ids.begin(), run_ids.end(), change.run_id()) !=
        run_ids.end()) {
      return {ChangeContextKind::kStart,
              absl::StrCat("start of a change: ", FormatChangeLine(change))};
    }
    if (change.run_id() < first &&
        (newest_before == nullptr ||
         change.run_id() > newest_before->run_id())) {
      newest_before = &change;
    }
  }
  if (newest_before != nullptr &&
      newest_before->runs_after() <=
          window + static_cast<int>(run_ids.size())) {
    return {ChangeContextKind::kEarlier,
            absl::StrCat("part of the change that began at run ",
                         newest_before->run_id(), ": ",
                         FormatChangeLine(*newest_before))};
  }
  return {ChangeContextKind::kNoise,
          absl::StrCat("noise: no change point of ", name, " in the last ",
                       window, " runs")};
}

void AddChangeContexts(const std::vector<v1::ChangePoint>& changes, int window,
                       RegressReport& report) {
  for (MetricComparison& comparison : report.metrics) {
    const ChangeContext context =
        ChangeContextOf(changes, comparison.metric, report.run_ids, window);
    comparison.change_context = context.text;
    if (comparison.verdict == RegressVerdict::kRegressed ||
        comparison.verdict == RegressVerdict::kImproved) {
      absl::StrAppend(&comparison.reason, "; ", context.text);
    }
  }
}

}  // namespace hpcai500
