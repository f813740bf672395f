// What `regress` says of a verdict beside the change points hpcai500d keeps
// for the series (server/coordinator/series_changes.h): whether tonight's
// runs start a change, are part of an earlier one, or are noise, with what
// changed in the runs' fingerprints. E-Divisive confirms a change only once
// a minimum segment of runs follows it, so a step tonight reads as noise
// until a few more nights, then as the change that began tonight.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_REGRESS_REGRESS_CHANGES_H_
#define HPCAI500_CLI_REGRESS_REGRESS_CHANGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/regress/regress.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

enum class ChangeContextKind {
  kStart,    // a change of the metric begins at one of these runs
  kEarlier,  // the newest change before them is within `window` runs
  kNoise,    // no change of the metric that recent
};

struct ChangeContext {
  ChangeContextKind kind = ChangeContextKind::kNoise;
  std::string text;  // "start of a change: ...", "part of ...", "noise: ..."
};

// The context of `metric` for a submission of `run_ids` among `changes`
// (its series', any order): kStart when a change of the metric begins at
// one of the runs; kEarlier when the newest change before them has at most
// `window` + the runs' count runs after it; else kNoise.
ChangeContext ChangeContextOf(const std::vector<v1::ChangePoint>& changes,
                              RegressMetric metric,
                              const std::vector<int64_t>& run_ids, int window);

// Adds each compared metric's context to its reason (for a regressed or
// improved metric; the JUnit and Markdown reports carry the reasons) and
// to `change_context`.
void AddChangeContexts(const std::vector<v1::ChangePoint>& changes, int window,
                       RegressReport& report);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_REGRESS_CHANGES_H_
