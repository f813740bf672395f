// Forecasts from a run's quality curve (quality after each evaluated epoch)
// whether it will reach its target within its epoch budget: fits the
// saturating learning curve q(e) = a - b * g(e), g a power law e^(-c) or an
// exponential exp(-c e), and propagates the noise of
// the measured points through the fit (a parametric bootstrap), which gives
// a probability that the quality after the last epoch reaches the target and
// the epoch where the median forecast first does. docs/design.md "Forecast
// and early abort" says why this curve and this uncertainty.
//
// Thread-safe: free functions; deterministic (a fixed seed).
#ifndef HPCAI500_METHODOLOGY_FORECAST_H_
#define HPCAI500_METHODOLOGY_FORECAST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The quality measured after one epoch.
struct CurvePoint {
  int epoch = 0;  // 1-based
  double quality = 0;
};

struct ForecastOptions {
  // Evaluations needed before a forecast: three fix the curve's three
  // parameters.
  int min_points = 3;
  // The least noise assumed on a measured quality (an evaluation on a
  // finite set): with few points the residuals alone would claim certainty.
  double noise_floor = 0.01;
  // Bootstrap replicates; the probability moves in steps of 1/replicates.
  int replicates = 400;
  uint64_t seed = 1;
};

// The evaluated epochs of `epochs` (accuracy >= 0), in epoch order.
std::vector<CurvePoint> QualityCurve(
    const google::protobuf::RepeatedPtrField<v1::EpochSummary>& epochs);

// The forecast for `curve` (any order; each epoch once) toward `target`
// after epoch `budget`. FailedPrecondition "not enough epochs yet ..." with
// fewer than options.min_points points; InvalidArgument for a budget below
// the last point's epoch or an epoch below 1. Qualities are fractions: a
// forecast above 1 counts as 1.
absl::StatusOr<v1::Forecast> ForecastQuality(
    std::vector<CurvePoint> curve, double target, int budget,
    const ForecastOptions& options = {});

// One line for operators: "reaches 0.763 by epoch 71, 80% likely" or
// "unlikely to reach 0.763 (12%)", then the median forecast after the last
// epoch; an aborted run's adds the node-hours saved.
std::string ForecastText(const v1::Forecast& forecast);

// Whether a run with `spec` must be aborted after `forecast`: the spec asks
// for it (abort_if_hopeless > 0), the run evaluated at least min_epochs
// epochs, has epochs left to save and the probability fell below
// abort_if_hopeless.
bool IsHopeless(const v1::RunSpec& spec, const v1::Forecast& forecast);

// Node-hours of `run`'s epochs after `after_epoch` up to its budget: nodes x
// epochs left x its mean epoch time so far (training only: evaluations are
// not counted, so it is a lower bound). 0 without epochs.
double NodeHoursLeft(const v1::Run& run, int after_epoch);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_FORECAST_H_
