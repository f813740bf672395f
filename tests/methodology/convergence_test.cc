#include "methodology/convergence.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace hpcai500 {
namespace {

ReferenceConvergence Point(int64_t batch, std::vector<double> epochs) {
  ReferenceConvergence r;
  r.workload = "image_classification";
  r.config = "c";
  r.global_batch = batch;
  r.epochs = std::move(epochs);
  r.made_by = "test";
  return r;
}

std::vector<std::optional<double>> Runs(std::vector<double> epochs) {
  return {epochs.begin(), epochs.end()};
}

// Values from scipy.stats.t.cdf, which the checker's t-test uses.
TEST(StudentTCdf, MatchesScipy) {
  EXPECT_NEAR(StudentTCdf(-1.5, 7), 0.088649243494985, 1e-12);
  EXPECT_NEAR(StudentTCdf(0.3, 3), 0.6081183539800405, 1e-12);
  EXPECT_NEAR(StudentTCdf(2.5, 12), 0.9860423002143374, 1e-12);
  EXPECT_NEAR(StudentTCdf(-4, 1), 0.07797913037736932, 1e-12);
  EXPECT_DOUBLE_EQ(StudentTCdf(0, 5), 0.5);
  EXPECT_DOUBLE_EQ(StudentTCdf(-3, 0), 0.5);  // no degrees of freedom
}

// The checker's own figure for ten reference runs of 30..39 epochs and a
// submission of five (RCP_Checker._find_min_acceptable_mean(34.5,
// np.std(30..39), 8) with submission_runs 5: 30.935455799102783).
TEST(Convergence, MinAcceptableMeanIsTheCheckersFigure) {
  const ReferenceStats stats =
      StatsOf(Point(256, {30, 31, 32, 33, 34, 35, 36, 37, 38, 39}), 5);
  EXPECT_DOUBLE_EQ(stats.mean, 34.5);  // without 30 and 39
  EXPECT_NEAR(stats.stdev, 2.8722813232690143, 1e-12);
  EXPECT_EQ(stats.samples, 8);
  EXPECT_NEAR(stats.min_epochs, 30.935455799102783, 1e-4);
  EXPECT_EQ(stats.source, "global batch 256");
  // No spread: nothing faster than the mean is explained by chance.
  EXPECT_DOUBLE_EQ(MinAcceptableMean(3, 0, 4, 3), 3);
}

TEST(Convergence, VerdictsAgainstAnExactBatch) {
  const std::vector<ReferenceConvergence> refs = {
      Point(256, {30, 31, 32, 33, 34, 35, 36, 37, 38, 39})};
  // Slower than the reference mean: passes, no normalisation.
  ConvergenceResult slow =
      CheckConvergence(Runs({35, 36, 37, 40, 33}), 256, refs);
  EXPECT_EQ(slow.verdict, ConvergenceVerdict::kPass);
  EXPECT_DOUBLE_EQ(slow.mean_epochs, 36);  // without 33 and 40
  EXPECT_DOUBLE_EQ(slow.factor, 1);
  // Faster, within the maximum speed-up: normalised by 34.5 / 32.
  ConvergenceResult fast =
      CheckConvergence(Runs({32, 31, 32, 32, 36}), 256, refs);
  EXPECT_EQ(fast.verdict, ConvergenceVerdict::kNormalized);
  EXPECT_DOUBLE_EQ(fast.mean_epochs, 32);
  EXPECT_DOUBLE_EQ(fast.factor, 34.5 / 32);
  // Beyond it: flagged for review, and normalised too.
  ConvergenceResult suspicious =
      CheckConvergence(Runs({25, 26, 27, 20, 30}), 256, refs);
  EXPECT_EQ(suspicious.verdict, ConvergenceVerdict::kReview);
  EXPECT_DOUBLE_EQ(suspicious.factor, 34.5 / 26);
  EXPECT_EQ(ConvergenceVerdictName(suspicious.verdict), "review");
}

TEST(Convergence, RunsThatNeverReachedTheTarget) {
  const std::vector<ReferenceConvergence> refs = {Point(64, {3, 4, 4, 5})};
  // Of five, one that never reached it is the slowest and dropped.
  ConvergenceResult one =
      CheckConvergence({4.0, 5.0, std::nullopt, 4.0, 6.0}, 64, refs);
  EXPECT_EQ(one.verdict, ConvergenceVerdict::kPass);
  EXPECT_DOUBLE_EQ(one.mean_epochs, 5);  // 4, 5, 6
  // Two are too many, and below three runs none is allowed.
  EXPECT_EQ(CheckConvergence({4.0, std::nullopt, std::nullopt, 4.0}, 64, refs)
                .verdict,
            ConvergenceVerdict::kNotConverged);
  EXPECT_EQ(CheckConvergence({4.0, std::nullopt}, 64, refs).verdict,
            ConvergenceVerdict::kNotConverged);
}

TEST(Convergence, InterpolatesBetweenBatchesAndStopsAboveTheLargest) {
  const std::vector<ReferenceConvergence> refs = {
      Point(256, {10, 11, 12, 13, 14}), Point(64, {4, 5, 6, 7, 8})};
  const std::optional<ReferenceStats> middle = ReferenceAt(refs, 160, 3);
  ASSERT_TRUE(middle.has_value());
  EXPECT_DOUBLE_EQ(middle->mean, 9);  // halfway between 6 and 12
  EXPECT_EQ(middle->samples, 6);      // twice the submission's runs
  EXPECT_EQ(middle->source, "interpolated at 160 between 64 and 256");
  // Below the smallest batch: the smallest batch's point.
  const std::optional<ReferenceStats> below = ReferenceAt(refs, 32, 3);
  ASSERT_TRUE(below.has_value());
  EXPECT_EQ(below->global_batch, 64);
  // Above the largest: no reference, unchecked.
  EXPECT_FALSE(ReferenceAt(refs, 512, 3).has_value());
  ConvergenceResult unchecked = CheckConvergence(Runs({3, 3, 3}), 512, refs);
  EXPECT_EQ(unchecked.verdict, ConvergenceVerdict::kUnchecked);
  EXPECT_DOUBLE_EQ(unchecked.mean_epochs, 3);
  EXPECT_DOUBLE_EQ(unchecked.factor, 1);
  EXPECT_EQ(CheckConvergence(Runs({3}), 64, {}).verdict,
            ConvergenceVerdict::kUnchecked);
}

}  // namespace
}  // namespace hpcai500
