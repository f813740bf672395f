// The tolerance band of a benchmark metric, learned from its history
// (docs/design.md "Nightly regression"): the metrics a run is judged by,
// which way each is better, their values in a run, and the robust z-score
// band (median and MAD of the last good runs) that says whether a new value
// moved more than the metric's own noise. `hpcai500 regress` judges with it,
// and the coordinator's history page (GET /api/v1/history) draws it.
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_REGRESS_BAND_H_
#define HPCAI500_METHODOLOGY_REGRESS_BAND_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

enum class RegressMetric {
  kThroughput,    // samples / train_seconds; higher is better
  kFlops,         // higher is better
  kValidFlops,    // higher is better
  kQuality,       // higher is better
  kTimeToTarget,  // training seconds until quality first reached the
                  // target; lower is better
};

// Every metric, in the order reports list them.
const std::vector<RegressMetric>& AllRegressMetrics();
// "throughput", "flops", "valid_flops", "quality", "time_to_target".
std::string RegressMetricName(RegressMetric metric);
// InvalidArgument naming the metric and the known ones for any other name.
absl::StatusOr<RegressMetric> ParseRegressMetric(absl::string_view name);
// Whether a larger value of `metric` is better (all but time to target).
bool HigherIsBetter(RegressMetric metric);

// The series a run belongs to for regress: its spec name and every field
// that changes what is measured (workload, config, level, nodes, ranks per
// node, device, batch size, precision, compression, epochs, system); seed
// and repetitions may differ. Equal keys: the same series. The coordinator
// keys promoted baselines by it.
std::string RegressSeriesKey(const v1::RunSpec& spec);

// The training seconds (the sum of the epochs' seconds) up to and including
// the first evaluated epoch whose quality reached the score's target;
// nullopt when no epoch reached it or the run has no score.
std::optional<double> TimeToTargetSeconds(const v1::Run& run);
// The number of the first evaluated epoch whose quality reached the score's
// target (MLPerf's epochs to converge); nullopt as TimeToTargetSeconds.
std::optional<double> EpochsToTarget(const v1::Run& run);
// The metric's value in a scored run; nullopt for time to target when the
// run never reached its target (throughput is 0 without training time).
std::optional<double> RegressMetricValue(const v1::Run& run,
                                         RegressMetric metric);

// The median; 0 for none.
double Median(std::vector<double> values);
// The median absolute deviation from the median; 0 for none.
double MedianAbsoluteDeviation(const std::vector<double>& values);

// The newest good runs of a series a baseline's median and its band learn
// from (`hpcai500 regress --window`).
inline constexpr int kDefaultRegressWindow = 10;

// How a band is drawn.
struct BandOptions {
  // Fewer good runs than this: the fixed band applies.
  int min_history = 5;
  // The band's half width in robust standard deviations (1.4826 x MAD,
  // which estimates the standard deviation of normal noise).
  double threshold = 3;
  // The narrowest learned half width, in percent of the centre, so that a
  // metric that never moved does not flag a 0.1% move.
  double min_band_pct = 2;
  // The half width, in percent of the centre, without enough history.
  double fixed_pct = 5;
};

struct ToleranceBand {
  double center = 0;      // the baseline value
  double half_width = 0;  // absolute, >= 0
  bool learned = false;   // else the fixed band (too little history)
  int history = 0;        // the good runs behind it

  double low() const { return center - half_width; }
  double high() const { return center + half_width; }
  // The half width in percent of the centre; 0 when the centre is 0.
  double HalfWidthPct() const;
};

// The band around `center` for a metric whose earlier good values are
// `history` (any order): learned (threshold x 1.4826 x MAD of history, at
// least min_band_pct of the centre) with at least options.min_history
// values, else fixed (fixed_pct of the centre).
ToleranceBand LearnBand(double center, const std::vector<double>& history,
                        const BandOptions& options);

enum class BandVerdict { kWithin, kWorse, kBetter };

// Where `value` lies against `band` for `metric`: worse or better when it
// is outside the band in that metric's bad or good direction.
BandVerdict JudgeAgainstBand(double value, const ToleranceBand& band,
                             RegressMetric metric);

// One value of a metric's history as the history page draws it: the band it
// was judged against (none while too little history came before) and
// whether it fell outside that band in the bad direction.
struct HistoryPoint {
  std::optional<ToleranceBand> band;
  bool regression = false;
};

// Judges each of `values` (one metric of a series, oldest first) in turn as
// a nightly regress with a series baseline would have: centred on the
// median of the last `window` good values before it, with the band LearnBand
// learns from them; no band while fewer than options.min_history came
// before. A regression is not good history: later bands leave it out.
std::vector<HistoryPoint> BandsOverHistory(const std::vector<double>& values,
                                           RegressMetric metric, int window,
                                           const BandOptions& options);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_REGRESS_BAND_H_
