// The convergence check of a submission against reference convergence
// points, as MLCommons' RCP checker (mlperf_logging.rcp_checker) does it
// (docs/design.md "Convergence check"): a submission whose mean epochs to
// target is faster than the reference's, beyond what chance explains, has
// its Valid FLOPS normalised by reference mean / its mean, and one faster
// than the checker's maximum speed-up is flagged for review.
//
// Thread-safe: free functions. Standard library only.
#ifndef HPCAI500_METHODOLOGY_CONVERGENCE_H_
#define HPCAI500_METHODOLOGY_CONVERGENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "methodology/registry.h"

namespace hpcai500 {

// The one-sided significance of the check (the checker's alpha).
inline constexpr double kConvergenceAlpha = 0.05;

// P(T <= t) for Student's t distribution with `df` > 0 degrees of freedom.
double StudentTCdf(double t, double df);

// A reference point's statistics, as the checker computes them: the mean of
// its epochs without the fastest and the slowest (`samples` of them), the
// population standard deviation of all of them, and the smallest mean
// epochs a submission may show and still not be faster than the reference with
// p < kConvergenceAlpha (a one-sided two-sample t-test with the reference's
// deviation on both sides).
struct ReferenceStats {
  int64_t global_batch = 0;
  double mean = 0;
  double stdev = 0;
  int samples = 0;
  double min_epochs = 0;
  // "global batch 64", or "interpolated at 96 between 64 and 128".
  std::string source;
};

// The runs of a submission of `runs` that its mean counts: all but the
// fastest and the slowest at 3 or more, else all.
int CountedRuns(int runs);

// The stats of `reference` for a submission of `submission_runs` runs.
ReferenceStats StatsOf(const ReferenceConvergence& reference,
                       int submission_runs);

// The smallest mean that a submission of `submission_samples` runs may show
// against a reference of `mean`, `stdev` and `reference_samples` without
// being faster with p < kConvergenceAlpha; `mean` itself when stdev is 0.
double MinAcceptableMean(double mean, double stdev, int reference_samples,
                         int submission_samples);

// The reference for a run at `global_batch` among `references` (one
// config's, any order): the point of that batch; else mean and deviation
// interpolated linearly between the nearest smaller and larger batches (the
// checker counts an interpolated point as twice the submission's runs, not
// pruned: its `--rcp_pass full_rcps`);
// else, below the smallest batch, the smallest batch's point (a smaller
// batch converges in no more epochs); nullopt above the largest or without
// points.
std::optional<ReferenceStats> ReferenceAt(
    const std::vector<ReferenceConvergence>& references, int64_t global_batch,
    int submission_runs);

enum class ConvergenceVerdict {
  kUnchecked,     // no reference for this config and batch
  kNotConverged,  // a reference, but too few runs reached the target
  kPass,          // not faster than the reference's mean
  kNormalized,    // faster than the mean, within the maximum speed-up
  kReview,        // faster than the maximum speed-up: flagged for review
};
// "unchecked", "not converged", "pass", "normalized", "review".
std::string ConvergenceVerdictName(ConvergenceVerdict verdict);

struct ConvergenceResult {
  ConvergenceVerdict verdict = ConvergenceVerdict::kUnchecked;
  // The submission's mean epochs to target: without the fastest and the
  // slowest run at 3 or more runs, the plain mean below; 0 when too few
  // runs reached the target.
  double mean_epochs = 0;
  std::optional<ReferenceStats> reference;
  // What Valid FLOPS is divided by: reference mean / mean epochs when the
  // verdict is kNormalized or kReview, else 1.
  double factor = 1;
};

// Checks a submission whose runs took `epochs` to reach the target (nullopt:
// a run that never did; the checker counts one such run as infinitely slow
// and refuses more) at `global_batch` against `references`.
ConvergenceResult CheckConvergence(
    const std::vector<std::optional<double>>& epochs, int64_t global_batch,
    const std::vector<ReferenceConvergence>& references);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_CONVERGENCE_H_
