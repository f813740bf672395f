// The change points of one run series (docs/design.md "Change points"):
// the series' good runs oldest first, a ChangePointTracker per metric
// (throughput, Valid FLOPS, quality, time to target, energy), and each
// change as a v1::ChangePoint: where, how big with its interval, whether
// it is a regression (the metric's bad direction) or a drift, and what
// changed in the runs' fingerprints across it. `hpcai500 changes`,
// /api/v1/changes, `regress` and the webhook all read these.
//
// Not thread-safe: one owner drives it (hpcai500d's SeriesChanges holds
// it under its mutex).
#ifndef HPCAI500_METHODOLOGY_SERIES_CHANGES_H_
#define HPCAI500_METHODOLOGY_SERIES_CHANGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "methodology/change_points.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The metrics change points are searched in: regress's (but FLOPS, which
// Valid FLOPS follows) and the energy a run measured.
struct ChangeMetric {
  std::string name;  // "throughput", "valid_flops", ..., "energy"
  bool higher_is_better = true;
  // The run's value; nullopt when it has none (time to target not reached,
  // energy not measured).
  std::optional<double> (*value)(const v1::Run& run) = nullptr;
};
const std::vector<ChangeMetric>& ChangeMetrics();

// Whether `run` belongs in a series' history: succeeded, scored, and its
// result not invalidated.
bool IsChangeHistoryRun(const v1::Run& run);

class SeriesChangeHistory {
 public:
  // `series` is the RegressSeriesKey of every run it is given; `name` the
  // spec name shown with its changes.
  SeriesChangeHistory(std::string series, std::string name,
                      const ChangePointOptions& options);

  // Replaces the history with `runs` (oldest first, each
  // IsChangeHistoryRun) and searches all of it.
  void Reset(const std::vector<v1::Run>& runs);
  // Appends `run` (newer than every run before, IsChangeHistoryRun) and
  // searches the last segments of each metric; returns the change points
  // it revealed.
  std::vector<v1::ChangePoint> Add(const v1::Run& run);

  // Every change point, by metric (ChangeMetrics' order) then index.
  std::vector<v1::ChangePoint> Changes() const;
  // The run ids of the history, oldest first.
  std::vector<int64_t> RunIds() const;
  const std::string& series() const { return series_; }
  const std::string& name() const { return name_; }

 private:
  struct RunFacts {
    int64_t id = 0;
    int64_t finished_ms = 0;
    v1::Fingerprint fingerprint;
  };
  struct Track {
    const ChangeMetric* metric;
    ChangePointTracker tracker;
    std::vector<size_t> runs;  // the run (in runs_) of each value
  };
  // Adds the run's facts and returns the values it adds to each track.
  std::vector<std::optional<double>> Note(const v1::Run& run);
  v1::ChangePoint ToProto(const Track& track, const ChangePoint& point) const;

  // Constant after construction.
  const std::string series_;
  const std::string name_;
  std::vector<RunFacts> runs_;
  std::vector<Track> tracks_;  // one per ChangeMetrics()
};

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SERIES_CHANGES_H_
