#include "methodology/convergence.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hpcai500 {
namespace {

// The continued fraction of the regularized incomplete beta function
// I_x(a, b) (modified Lentz), for x < (a + 1) / (a + b + 2), where it
// converges fast.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1;
  double d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= 1000; ++m) {
    // The even step d_2m, then the odd step d_2m+1.
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 + even * d;
    c = 1 + even / c;
    d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
    if (std::fabs(c) < kTiny) c = kTiny;
    f *= c * d;
    const double odd =
        -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 + odd * d;
    c = 1 + odd / c;
    d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
    if (std::fabs(c) < kTiny) c = kTiny;
    const double delta = c * d;
    f *= delta;
    if (std::fabs(delta - 1) < kEpsilon) break;
  }
  return f;
}

// I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1.
double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) -
                           std::lgamma(b) + a * std::log(x) +
                           b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) {
    return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  }
  return 1 - std::exp(log_front) * BetaContinuedFraction(b, a, 1 - x) / b;
}

// The mean without the smallest and the largest value at 3 or more values
// (the checker's "olympic" mean), else the plain mean.
double OlympicMean(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t drop = values.size() >= 3 ? 1 : 0;
  double sum = 0;
  for (size_t i = drop; i + drop < values.size(); ++i) sum += values[i];
  return sum / static_cast<double>(values.size() - 2 * drop);
}

double PopulationStdev(const std::vector<double>& values) {
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size()));
}

double Interpolate(int64_t at, int64_t x0, double y0, int64_t x1, double y1) {
  return y0 + (y1 - y0) * static_cast<double>(at - x0) /
                  static_cast<double>(x1 - x0);
}

}  // namespace

double StudentTCdf(double t, double df) {
  if (!(df > 0)) return 0.5;  // no degrees of freedom: nothing is known
  const double tail = 0.5 * RegularizedBeta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

int CountedRuns(int runs) { return runs >= 3 ? runs - 2 : runs; }

double MinAcceptableMean(double mean, double stdev, int reference_samples,
                         int submission_samples) {
  if (stdev <= 0) return mean;
  const double scale =
      stdev * std::sqrt(1.0 / reference_samples + 1.0 / submission_samples);
  const double df = reference_samples + submission_samples - 2;
  // The one-sided p-value rises with the submission's mean: bisect for
  // where it crosses alpha, to the checker's tolerance.
  double low = 0;
  double high = mean;
  while (high - low > 1e-4) {
    const double middle = (low + high) / 2;
    if (StudentTCdf((middle - mean) / scale, df) > kConvergenceAlpha) {
      high = middle;
    } else {
      low = middle;
    }
  }
  return (low + high) / 2;
}

ReferenceStats StatsOf(const ReferenceConvergence& reference,
                       int submission_runs) {
  ReferenceStats stats;
  stats.global_batch = reference.global_batch;
  stats.mean = OlympicMean(reference.epochs);
  stats.stdev = PopulationStdev(reference.epochs);
  stats.samples = CountedRuns(static_cast<int>(reference.epochs.size()));
  stats.min_epochs = MinAcceptableMean(stats.mean, stats.stdev, stats.samples,
                                       CountedRuns(submission_runs));
  stats.source = "global batch " + std::to_string(reference.global_batch);
  return stats;
}

std::optional<ReferenceStats> ReferenceAt(
    const std::vector<ReferenceConvergence>& references, int64_t global_batch,
    int submission_runs) {
  const ReferenceConvergence* below = nullptr;  // the largest batch under
  const ReferenceConvergence* above = nullptr;  // the smallest batch over
  for (const ReferenceConvergence& r : references) {
    if (r.global_batch == global_batch) return StatsOf(r, submission_runs);
    if (r.global_batch < global_batch &&
        (below == nullptr || r.global_batch > below->global_batch)) {
      below = &r;
    }
    if (r.global_batch > global_batch &&
        (above == nullptr || r.global_batch < above->global_batch)) {
      above = &r;
    }
  }
  if (above == nullptr) return std::nullopt;
  if (below == nullptr) return StatsOf(*above, submission_runs);
  const ReferenceStats low = StatsOf(*below, submission_runs);
  const ReferenceStats high = StatsOf(*above, submission_runs);
  ReferenceStats stats;
  stats.global_batch = global_batch;
  stats.mean = Interpolate(global_batch, low.global_batch, low.mean,
                           high.global_batch, high.mean);
  stats.stdev = Interpolate(global_batch, low.global_batch, low.stdev,
                            high.global_batch, high.stdev);
  stats.samples = 2 * submission_runs;
  stats.min_epochs = MinAcceptableMean(stats.mean, stats.stdev, stats.samples,
                                       CountedRuns(submission_runs));
  stats.source = "interpolated at " + std::to_string(global_batch) +
                 " between " + std::to_string(low.global_batch) + " and " +
                 std::to_string(high.global_batch);
  return stats;
}

std::string ConvergenceVerdictName(ConvergenceVerdict verdict) {
  switch (verdict) {
    case ConvergenceVerdict::kUnchecked:
      return "unchecked";
    case ConvergenceVerdict::kNotConverged:
      return "not converged";
    case ConvergenceVerdict::kPass:
      return "pass";
    case ConvergenceVerdict::kNormalized:
      return "normalized";
    case ConvergenceVerdict::kReview:
      return "review";
  }
  return "unchecked";
}

ConvergenceResult CheckConvergence(
    const std::vector<std::optional<double>>& epochs, int64_t global_batch,
    const std::vector<ReferenceConvergence>& references) {
  ConvergenceResult result;
  const int runs = static_cast<int>(epochs.size());
  result.reference = ReferenceAt(references, global_batch, runs);
  if (runs == 0) return result;
  // A run that never reached the target counts as infinitely slow; the
  // mean drops the slowest only at 3 or more runs, so one such run is
  // allowed there and none below.
  std::vector<double> values;
  for (const std::optional<double>& e : epochs) {
    values.push_back(e.value_or(std::numeric_limits<double>::infinity()));
  }
  const int missing =
      static_cast<int>(std::count(epochs.begin(), epochs.end(), std::nullopt));
  const bool enough = missing <= (runs >= 3 ? 1 : 0);
  if (enough) result.mean_epochs = OlympicMean(values);
  if (!result.reference.has_value()) return result;  // kUnchecked
  if (!enough) {
    result.verdict = ConvergenceVerdict::kNotConverged;
    return result;
  }
  const ReferenceStats& reference = *result.reference;
  if (result.mean_epochs >= reference.mean) {
    result.verdict = ConvergenceVerdict::kPass;
    return result;
  }
  result.factor = reference.mean / result.mean_epochs;
  result.verdict = result.mean_epochs >= reference.min_epochs
                       ? ConvergenceVerdict::kNormalized
                       : ConvergenceVerdict::kReview;
  return result;
}

}  // namespace hpcai500
