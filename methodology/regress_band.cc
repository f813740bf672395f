#include "methodology/regress_band.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// 1 / the standard normal's third quartile: scales a MAD to a standard
// deviation for normal noise.
constexpr double kMadToSigma = 1.4826;

}  // namespace

const std::vector<RegressMetric>& AllRegressMetrics() {
  static const auto* const kAll = new std::vector<RegressMetric>{
      RegressMetric::kThroughput, RegressMetric::kFlops,
      RegressMetric::kValidFlops, RegressMetric::kQuality,
      RegressMetric::kTimeToTarget};
  return *kAll;
}

std::string RegressMetricName(RegressMetric metric) {
  switch (metric) {
    case RegressMetric::kThroughput:
      return "throughput";
    case RegressMetric::kFlops:
      return "flops";
    case RegressMetric::kValidFlops:
      return "valid_flops";
    case RegressMetric::kQuality:
      return "quality";
    case RegressMetric::kTimeToTarget:
      return "time_to_target";
  }
  return "unknown";
}

absl::StatusOr<RegressMetric> ParseRegressMetric(absl::string_view name) {
  std::vector<std::string> known;
  for (RegressMetric metric : AllRegressMetrics()) {
    if (name == RegressMetricName(metric)) return metric;
    known.push_back(RegressMetricName(metric));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown metric '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
}

bool HigherIsBetter(RegressMetric metric) {
  return metric != RegressMetric::kTimeToTarget;
}

std::string RegressSeriesKey(const v1::RunSpec& spec) {
  // A JSON array: unambiguous whatever the names hold, and readable in the
  // database.
  return nlohmann::json::array(
             {spec.name(), spec.workload(), spec.config(), spec.level(),
              spec.nodes(), spec.ranks_per_node(), spec.device(),
              spec.batch_size(), spec.precision(), spec.compression(),
              spec.epochs(), spec.system()})
      .dump();
}

std::optional<double> TimeToTargetSeconds(const v1::Run& run) {
  if (!run.has_score()) return std::nullopt;
  const double target = run.score().target();
  double seconds = 0;
  for (const v1::EpochSummary& epoch : run.epochs()) {
    seconds += epoch.seconds();
    if (epoch.accuracy() >= 0 && epoch.accuracy() >= target) return seconds;
  }
  return std::nullopt;
}

std::optional<double> EpochsToTarget(const v1::Run& run) {
  if (!run.has_score()) return std::nullopt;
  for (const v1::EpochSummary& epoch : run.epochs()) {
    if (epoch.accuracy() >= 0 && epoch.accuracy() >= run.score().target()) {
      return epoch.epoch();
    }
  }
  return std::nullopt;
}

std::optional<double> RegressMetricValue(const v1::Run& run,
                                         RegressMetric metric) {
  const v1::Score& score = run.score();
  switch (metric) {
    case RegressMetric::kThroughput:
      return score.train_seconds() > 0
                 ? static_cast<double>(score.samples()) / score.train_seconds()
                 : 0;
    case RegressMetric::kFlops:
      return score.flops();
    case RegressMetric::kValidFlops:
      return score.valid_flops();
    case RegressMetric::kQuality:
      return score.quality();
    case RegressMetric::kTimeToTarget:
      return TimeToTargetSeconds(run);
  }
  return std::nullopt;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

double MedianAbsoluteDeviation(const std::vector<double>& values) {
  const double median = Median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double value : values) deviations.push_back(std::fabs(value - median));
  return Median(std::move(deviations));
}

double ToleranceBand::HalfWidthPct() const {
  return center != 0 ? half_width * 100 / std::fabs(center) : 0;
}

ToleranceBand LearnBand(double center, const std::vector<double>& history,
                        const BandOptions& options) {
  ToleranceBand band;
  band.center = center;
  band.history = static_cast<int>(history.size());
  band.learned = band.history >= options.min_history;
  if (!band.learned) {
    band.half_width = std::fabs(center) * options.fixed_pct / 100;
    return band;
  }
  const double spread =
      options.threshold * kMadToSigma * MedianAbsoluteDeviation(history);
  band.half_width =
      std::max(spread, std::fabs(center) * options.min_band_pct / 100);
  return band;
}

BandVerdict JudgeAgainstBand(double value, const ToleranceBand& band,
                             RegressMetric metric) {
  const bool higher = HigherIsBetter(metric);
  if (value < band.low()) {
    return higher ? BandVerdict::kWorse : BandVerdict::kBetter;
  }
  if (value > band.high()) {
    return higher ? BandVerdict::kBetter : BandVerdict::kWorse;
  }
  return BandVerdict::kWithin;
}

std::vector<HistoryPoint> BandsOverHistory(const std::vector<double>& values,
                                           RegressMetric metric, int window,
                                           const BandOptions& options) {
  std::vector<HistoryPoint> points;
  points.reserve(values.size());
  std::vector<double> good;
  for (double value : values) {
    HistoryPoint& point = points.emplace_back();
    if (static_cast<int>(good.size()) >= options.min_history) {
      const std::vector<double> recent(
          good.end() - std::min<size_t>(good.size(), std::max(window, 1)),
          good.end());
      point.band = LearnBand(Median(recent), recent, options);
      point.regression =
          JudgeAgainstBand(value, *point.band, metric) == BandVerdict::kWorse;
    }
    if (!point.regression) good.push_back(value);
  }
  return points;
}

}  // namespace hpcai500
