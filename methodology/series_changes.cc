// The change points of one run series: see series_changes.h.
#include "methodology/series_changes.h"

#include <utility>

#include "methodology/fingerprint.h"
#include "methodology/regress_band.h"

namespace hpcai500 {
namespace {

std::optional<double> Throughput(const v1::Run& run) {
  return RegressMetricValue(run, RegressMetric::kThroughput);
}
std::optional<double> ValidFlops(const v1::Run& run) {
  return RegressMetricValue(run, RegressMetric::kValidFlops);
}
std::optional<double> Quality(const v1::Run& run) {
  return RegressMetricValue(run, RegressMetric::kQuality);
}
std::optional<double> TimeToTarget(const v1::Run& run) {
  return RegressMetricValue(run, RegressMetric::kTimeToTarget);
}
std::optional<double> Energy(const v1::Run& run) {
  if (run.score().energy_joules() <= 0) return std::nullopt;
  return run.score().energy_joules();
}

}  // namespace

const std::vector<ChangeMetric>& ChangeMetrics() {
  static const auto* const kMetrics = new std::vector<ChangeMetric>{
      {"throughput", true, &Throughput},
      {"valid_flops", true, &ValidFlops},
      {"quality", true, &Quality},
      {"time_to_target", false, &TimeToTarget},
      {"energy", false, &Energy},
  };
  return *kMetrics;
}

bool IsChangeHistoryRun(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_SUCCEEDED && run.has_score() &&
         run.invalidated_by().empty();
}

SeriesChangeHistory::SeriesChangeHistory(std::string series, std::string name,
                                         const ChangePointOptions& options)
    : series_(std::move(series)), name_(std::move(name)) {
  for (const ChangeMetric& metric : ChangeMetrics()) {
    tracks_.push_back({&metric, ChangePointTracker(options), {}});
  }
}

std::vector<std::optional<double>> SeriesChangeHistory::Note(
    const v1::Run& run) {
  runs_.push_back({run.id(), run.finished_ms(), run.fingerprint()});
  std::vector<std::optional<double>> values;
  for (Track& track : tracks_) {
    values.push_back(track.metric->value(run));
    if (values.back()) track.runs.push_back(runs_.size() - 1);
  }
  return values;
}

void SeriesChangeHistory::Reset(const std::vector<v1::Run>& runs) {
  runs_.clear();
  std::vector<std::vector<double>> values(tracks_.size());
  for (Track& track : tracks_) track.runs.clear();
  for (const v1::Run& run : runs) {
    const std::vector<std::optional<double>> noted = Note(run);
    for (size_t t = 0; t < tracks_.size(); ++t) {
      if (noted[t]) values[t].push_back(*noted[t]);
    }
  }
  for (size_t t = 0; t < tracks_.size(); ++t) {
    tracks_[t].tracker.Reset(std::move(values[t]));
  }
}

std::vector<v1::ChangePoint> SeriesChangeHistory::Add(const v1::Run& run) {
  const std::vector<std::optional<double>> noted = Note(run);
  std::vector<v1::ChangePoint> revealed;
  for (size_t t = 0; t < tracks_.size(); ++t) {
    if (!noted[t]) continue;
    for (const ChangePoint& point : tracks_[t].tracker.Append(*noted[t])) {
      revealed.push_back(ToProto(tracks_[t], point));
    }
  }
  return revealed;
}

std::vector<v1::ChangePoint> SeriesChangeHistory::Changes() const {
  std::vector<v1::ChangePoint> changes;
  for (const Track& track : tracks_) {
    for (const ChangePoint& point : track.tracker.ChangePoints()) {
      changes.push_back(ToProto(track, point));
    }
  }
  return changes;
}

std::vector<int64_t> SeriesChangeHistory::RunIds() const {
  std::vector<int64_t> ids;
  for (const RunFacts& run : runs_) ids.push_back(run.id);
  return ids;
}

v1::ChangePoint SeriesChangeHistory::ToProto(const Track& track,
                                             const ChangePoint& point) const {
  v1::ChangePoint change;
  change.set_series(series_);
  change.set_name(name_);
  change.set_metric(track.metric->name);
  const RunFacts& first = runs_[track.runs[point.index]];
  change.set_run_id(first.id);
  change.set_finished_ms(first.finished_ms);
  change.set_previous_run_id(runs_[track.runs[point.index - 1]].id);
  change.set_index(point.index);
  change.set_runs_before(point.index - point.before_start);
  change.set_runs_after(point.after_end - point.index);
  change.set_mean_before(point.mean_before);
  change.set_mean_after(point.mean_after);
  change.set_change_pct(point.change_pct);
  change.set_change_pct_low(point.change_pct_low);
  change.set_change_pct_high(point.change_pct_high);
  change.set_p_value(point.p_value);
  change.set_gradual(point.gradual);
  change.set_regression(track.metric->higher_is_better ? point.change < 0
                                                       : point.change > 0);
  // The fingerprints of the runs beside it; runs stored before
  // fingerprints existed have none and are left out.
  std::vector<v1::Fingerprint> before, after;
  for (int i = point.before_start; i < point.after_end; ++i) {
    const v1::Fingerprint& fingerprint = runs_[track.runs[i]].fingerprint;
    if (fingerprint.fields().empty()) continue;
    (i < point.index ? before : after).push_back(fingerprint);
  }
  const std::vector<FieldShift> shifts = AttributeChange(before, after);
  for (const FieldShift& shift : shifts) change.add_changed_fields(shift.field);
  change.set_attribution(
      AttributionText(shifts, !before.empty() && !after.empty()));
  return change;
}

}  // namespace hpcai500
