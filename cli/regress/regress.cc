// The judging of `hpcai500 regress`: series, baselines, bands and the
// verdict per metric (cli/regress/regress.h).
#include "cli/regress/regress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/text/format.h"
#include "common/run_state.h"

namespace hpcai500 {
namespace {

// Every metric but flops, which Valid FLOPS already judges.
std::vector<RegressMetric> DefaultMetrics() {
  return {RegressMetric::kThroughput, RegressMetric::kValidFlops,
          RegressMetric::kQuality, RegressMetric::kTimeToTarget};
}

// Each RegressBaselineKind's name, in the enum's order.
constexpr const char* kBaselineKindNames[] = {"series", "promoted", "last-good",
                                              "run", "file"};

// Each RegressVerdict's names, in the enum's order: for people, and as a
// JSON value (lower case like the other values).
struct VerdictNames {
  const char* text;
  const char* json;
};
constexpr VerdictNames kVerdictNames[] = {
    {"no baseline", "no_baseline"},  // kNoBaseline
    {"ok", "ok"},                    // kOk
    {"REGRESSED", "regressed"},      // kRegressed
    {"improved", "improved"},        // kImproved
};

// The most history runs a reason names before "...".
constexpr size_t kEvidenceShown = 10;

// Whether more than half of `runs` reached their target.
bool MostReachedTarget(const std::vector<v1::Run>& runs) {
  size_t reached = std::count_if(
      runs.begin(), runs.end(),
      [](const v1::Run& run) { return run.score().reached_target(); });
  return !runs.empty() && 2 * reached > runs.size();
}

// The metric's value of each run that has one, in the runs' order.
std::vector<double> ValuesOf(const std::vector<v1::Run>& runs,
                             RegressMetric metric) {
  std::vector<double> values;
  for (const v1::Run& run : runs) {
    if (std::optional<double> value = RegressMetricValue(run, metric)) {
      values.push_back(*value);
    }
  }
  return values;
}

// The coefficient of variation in percent of the runs that have the metric;
// empty below two.
std::optional<double> SpreadOf(const std::vector<v1::Run>& runs,
                               RegressMetric metric) {
  const std::vector<double> values = ValuesOf(runs, metric);
  if (values.size() < 2) return std::nullopt;
  return 100 * CoefficientOfVariation(values);
}

// The median of the runs that have the metric; empty when none has.
std::optional<double> MedianOf(const std::vector<v1::Run>& runs,
                               RegressMetric metric) {
  std::vector<double> values = ValuesOf(runs, metric);
  if (values.empty()) return std::nullopt;
  return Median(std::move(values));
}

// What this submission's runs (`current`) measured of `metric`: the median,
// the spread, and for throughput, FLOPS and Valid FLOPS whether that spread
// is above `max_cv_pct`.
MetricComparison Measure(const std::vector<v1::Run>& current,
                         RegressMetric metric, double max_cv_pct) {
  MetricComparison comparison;
  comparison.metric = metric;
  comparison.value = MedianOf(current, metric);
  comparison.spread_pct = SpreadOf(current, metric);
  comparison.unrepeatable =
      comparison.spread_pct.has_value() &&
      *comparison.spread_pct > max_cv_pct &&
      (metric == RegressMetric::kThroughput ||
       metric == RegressMetric::kFlops || metric == RegressMetric::kValidFlops);
  return comparison;
}

// Quality against baseline runs: it also regresses when most of `baseline`
// reached their target and most of `current` did not.
void JudgeTargetReached(const std::vector<v1::Run>& baseline,
                        const std::vector<v1::Run>& current,
                        MetricComparison& comparison) {
  if (baseline.empty() || !MostReachedTarget(baseline) ||
      MostReachedTarget(current)) {
    return;
  }
  comparison.verdict = RegressVerdict::kRegressed;
  comparison.reason =
      absl::StrCat(comparison.reason.empty() ? "" : comparison.reason + "; ",
                   "the baseline reached its target, this run did not");
}

// The metrics judged: the asked ones (or the defaults), then any other one
// that has a fixed value.
std::vector<RegressMetric> JudgedMetrics(
    const RegressOptions& options,
    const std::map<RegressMetric, double>& fixed) {
  std::vector<RegressMetric> metrics = options.metrics;
  if (metrics.empty()) metrics = DefaultMetrics();
  for (const auto& [metric, value] : fixed) {
    if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      metrics.push_back(metric);
    }
  }
  return metrics;
}

// The runs named as evidence, at most kEvidenceShown of them.
std::string EvidenceList(const std::vector<int64_t>& ids) {
  if (ids.size() <= kEvidenceShown) return FormatRunIds(ids);
  return absl::StrCat(FormatRunIds(std::vector<int64_t>(
                          ids.begin(), ids.begin() + kEvidenceShown)),
                      ", ...");
}

// How the band was drawn and from what: "±8.1% learned from 7 runs (12, 11,
// ...)" or "±5.0% fixed: 3 good runs, fewer than 5".
std::string BandEvidence(const MetricComparison& comparison,
                         const BandOptions& options) {
  const ToleranceBand& band = *comparison.band;
  if (band.learned) {
    return absl::StrFormat("%s learned (robust z %g) from %d good %s",
                           FormatBandWidth(band), options.threshold,
                           band.history, EvidenceList(comparison.evidence));
  }
  return absl::StrFormat("%s fixed (--tolerance): %d good run%s, fewer than %d",
                         FormatBandWidth(band), band.history,
                         band.history == 1 ? "" : "s", options.min_history);
}

// "dropped 12.3% (1052.0 samples/s -> 923.1 samples/s)".
std::string Move(const MetricComparison& comparison) {
  const RegressMetric metric = comparison.metric;
  const std::string values =
      absl::StrCat(FormatRegressValue(metric, *comparison.baseline), " -> ",
                   FormatRegressValue(metric, comparison.value));
  if (!comparison.change_pct.has_value()) return values;
  return absl::StrFormat("%s %.1f%% (%s)",
                         *comparison.change_pct < 0 ? "dropped" : "rose",
                         std::fabs(*comparison.change_pct), values);
}

// Sets the change from the baseline, the band and the verdict they earn.
void Judge(MetricComparison& comparison, const std::vector<v1::Run>& history,
           const RegressOptions& options) {
  if (!comparison.baseline.has_value()) {
    comparison.verdict = RegressVerdict::kNoBaseline;
    return;
  }
  const double baseline = *comparison.baseline;
  std::vector<double> learned_from;
  for (const v1::Run& run : history) {
    if (std::optional<double> value =
            RegressMetricValue(run, comparison.metric)) {
      learned_from.push_back(*value);
      comparison.evidence.push_back(run.id());
    }
  }
  BandOptions band_options = options.band;
  band_options.fixed_pct = options.tolerance_pct;
  comparison.band = LearnBand(baseline, learned_from, band_options);
  if (!comparison.value.has_value()) {
    // Only time to target lacks a value: the target was not reached.
    comparison.verdict = RegressVerdict::kRegressed;
    comparison.reason =
        absl::StrCat("no run reached the target; the baseline did in ",
                     FormatRegressValue(comparison.metric, baseline));
    return;
  }
  const double value = *comparison.value;
  if (baseline > 0) {
    // Multiplied first so that round percentages stay exact (95 vs 100: -5).
    comparison.change_pct = (value - baseline) * 100 / baseline;
  }
  switch (JudgeAgainstBand(value, *comparison.band, comparison.metric)) {
    case BandVerdict::kWithin:
      comparison.verdict = RegressVerdict::kOk;
      return;
    case BandVerdict::kWorse:
      comparison.verdict = RegressVerdict::kRegressed;
      break;
    case BandVerdict::kBetter:
      comparison.verdict = RegressVerdict::kImproved;
      break;
  }
  comparison.reason = absl::StrCat(Move(comparison), ", outside the band ",
                                   BandEvidence(comparison, band_options));
}

}  // namespace

std::string FormatRegressValue(RegressMetric metric, double value) {
  switch (metric) {
    case RegressMetric::kThroughput:
      return absl::StrFormat("%.1f samples/s", value);
    case RegressMetric::kFlops:
    case RegressMetric::kValidFlops:
      return FormatFlops(value);
    case RegressMetric::kQuality:
      return absl::StrFormat("%.4f", value);
    case RegressMetric::kTimeToTarget:
      return absl::StrFormat("%.1f s", value);
  }
  return absl::StrCat(value);
}

std::string FormatRegressValue(RegressMetric metric,
                               const std::optional<double>& value) {
  if (!value.has_value()) {
    return metric == RegressMetric::kTimeToTarget ? "not reached" : "-";
  }
  return FormatRegressValue(metric, *value);
}

std::string FormatRunIds(const std::vector<int64_t>& ids) {
  return absl::StrCat(ids.size() == 1 ? "run " : "runs ",
                      absl::StrJoin(ids, ", "));
}

std::string FormatBandWidth(const ToleranceBand& band) {
  return absl::StrFormat("\u00b1%.1f%%", band.HalfWidthPct());
}

std::string RegressBaselineKindName(RegressBaselineKind kind) {
  return kBaselineKindNames[static_cast<size_t>(kind)];
}

bool SameRegressSeries(const v1::RunSpec& a, const v1::RunSpec& b) {
  return RegressSeriesKey(a) == RegressSeriesKey(b);
}

bool IsGoodSeriesRun(const v1::Run& run, const v1::RunSpec& spec) {
  return HasValidResult(run) && SameRegressSeries(run.spec(), spec);
}

std::vector<v1::Run> SelectRegressSeries(const std::vector<v1::Run>& runs,
                                         const v1::RunSpec& spec, int window) {
  std::vector<v1::Run> series;
  for (const v1::Run& run : runs) {
    if (IsGoodSeriesRun(run, spec)) series.push_back(run);
  }
  std::sort(series.begin(), series.end(),
            [](const v1::Run& a, const v1::Run& b) { return a.id() > b.id(); });
  if (window >= 0 && series.size() > static_cast<size_t>(window)) {
    series.resize(window);
  }
  return series;
}

bool RegressReport::regressed() const {
  return std::any_of(metrics.begin(), metrics.end(),
                     [](const MetricComparison& comparison) {
                       return comparison.verdict == RegressVerdict::kRegressed;
                     });
}

RegressTally TallyRegressReports(const std::vector<RegressReport>& reports) {
  RegressTally tally;
  for (const RegressReport& report : reports) {
    if (!report.error.empty()) {
      ++tally.failed;
      continue;
    }
    tally.verdicts += static_cast<int>(report.metrics.size());
    tally.regressed += static_cast<int>(
        std::count_if(report.metrics.begin(), report.metrics.end(),
                      [](const MetricComparison& comparison) {
                        return comparison.verdict == RegressVerdict::kRegressed;
                      }));
  }
  return tally;
}

RegressReport CompareRegress(
    const std::vector<v1::Run>& current, const std::vector<v1::Run>& baseline,
    const std::vector<v1::Run>& history, RegressBaselineKind kind,
    const RegressOptions& options,
    const std::map<RegressMetric, double>& file_values) {
  RegressReport report;
  if (!current.empty()) report.name = current.front().spec().name();
  for (const v1::Run& run : current) report.run_ids.push_back(run.id());
  for (const v1::Run& run : baseline) report.baseline_runs.push_back(run.id());
  report.baseline_kind = kind;
  report.tolerance_pct = options.tolerance_pct;
  // --reference over the file's values.
  std::map<RegressMetric, double> fixed = file_values;
  for (const auto& [metric, value] : options.references) fixed[metric] = value;
  for (RegressMetric metric : JudgedMetrics(options, fixed)) {
    MetricComparison comparison = Measure(current, metric, options.max_cv_pct);
    if (auto value = fixed.find(metric); value != fixed.end()) {
      comparison.baseline = value->second;
      comparison.from_reference = true;
    } else {
      comparison.baseline = MedianOf(baseline, metric);
    }
    Judge(comparison, history, options);
    if (metric == RegressMetric::kQuality && !comparison.from_reference) {
      JudgeTargetReached(baseline, current, comparison);
    }
    report.metrics.push_back(std::move(comparison));
  }
  return report;
}

RegressReport CompareRegress(const std::vector<v1::Run>& current,
                             const std::vector<v1::Run>& baseline,
                             const RegressOptions& options) {
  return CompareRegress(current, baseline, baseline,
                        RegressBaselineKind::kSeries, options);
}

std::string RegressVerdictName(RegressVerdict verdict) {
  return kVerdictNames[static_cast<size_t>(verdict)].text;
}

std::string RegressVerdictJsonName(RegressVerdict verdict) {
  return kVerdictNames[static_cast<size_t>(verdict)].json;
}

}  // namespace hpcai500
