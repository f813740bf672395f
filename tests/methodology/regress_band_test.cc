#include "methodology/regress_band.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

// A run whose epochs took `seconds` each and reached `accuracy` after each
// (-1: not evaluated), with target 0.7.
v1::Run RunWithEpochs(const std::vector<double>& seconds,
                      const std::vector<double>& accuracy) {
  v1::Run run;
  run.mutable_score()->set_target(0.7);
  for (size_t i = 0; i < seconds.size(); ++i) {
    v1::EpochSummary* epoch = run.add_epochs();
    epoch->set_epoch(static_cast<int>(i) + 1);
    epoch->set_seconds(seconds[i]);
    epoch->set_accuracy(accuracy[i]);
  }
  return run;
}

TEST(Median, TakesTheMiddleOrTheMeanOfTheTwoMiddles) {
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({7}), 7);
  EXPECT_EQ(Median({}), 0);
}

TEST(MedianAbsoluteDeviation, IgnoresOneOutlier) {
  EXPECT_EQ(MedianAbsoluteDeviation({10, 11, 9, 10, 1000}), 1);
  EXPECT_EQ(MedianAbsoluteDeviation({5, 5, 5}), 0);
}

TEST(LearnBand, NoisySeriesGetsAWideBandAndAStableOneATightBand) {
  const BandOptions options;
  // Throughput on a shared CI box: 1052 to 2347 samples/s.
  const std::vector<double> noisy = {1052, 2347, 1500, 1900, 1210, 2100};
  const std::vector<double> stable = {1000, 1001, 999, 1000, 1002, 998};
  ToleranceBand wide = LearnBand(Median(noisy), noisy, options);
  ToleranceBand tight = LearnBand(Median(stable), stable, options);
  EXPECT_TRUE(wide.learned);
  EXPECT_TRUE(tight.learned);
  EXPECT_EQ(wide.history, 6);
  EXPECT_GT(wide.HalfWidthPct(), 40);
  // A MAD of 1 is 0.4% at 3 sigma; the minimum band of 2% applies.
  EXPECT_DOUBLE_EQ(tight.HalfWidthPct(), 2);
  // The noisy series tolerates a 30% drop, the stable one not a 5% drop.
  EXPECT_EQ(
      JudgeAgainstBand(0.7 * wide.center, wide, RegressMetric::kThroughput),
      BandVerdict::kWithin);
  EXPECT_EQ(JudgeAgainstBand(950, tight, RegressMetric::kThroughput),
            BandVerdict::kWorse);
  EXPECT_EQ(JudgeAgainstBand(995, tight, RegressMetric::kThroughput),
            BandVerdict::kWithin);
}

TEST(LearnBand, ScalesTheMadByTheNormalConstantAndTheThreshold) {
  BandOptions options;
  options.min_band_pct = 0;
  ToleranceBand band = LearnBand(100, {90, 95, 100, 105, 110}, options);
  // MAD 5 -> sigma 7.413 -> 3 sigma 22.239.
  EXPECT_NEAR(band.half_width, 3 * 1.4826 * 5, 1e-9);
  EXPECT_NEAR(band.low(), 100 - 22.239, 1e-9);
}

TEST(LearnBand, TooShortHistoryFallsBackToTheFixedBand) {
  BandOptions options;
  options.fixed_pct = 10;
  // Four wildly different runs: one fewer than the minimum of five.
  ToleranceBand band = LearnBand(200, {100, 400, 200, 300}, options);
  EXPECT_FALSE(band.learned);
  EXPECT_EQ(band.history, 4);
  EXPECT_DOUBLE_EQ(band.half_width, 20);
  EXPECT_EQ(JudgeAgainstBand(179, band, RegressMetric::kQuality),
            BandVerdict::kWorse);
}

TEST(JudgeAgainstBand, DirectionDependsOnTheMetric) {
  ToleranceBand band;
  band.center = 100;
  band.half_width = 10;
  for (RegressMetric metric :
       {RegressMetric::kThroughput, RegressMetric::kFlops,
        RegressMetric::kValidFlops, RegressMetric::kQuality}) {
    EXPECT_TRUE(HigherIsBetter(metric)) << RegressMetricName(metric);
    EXPECT_EQ(JudgeAgainstBand(80, band, metric), BandVerdict::kWorse);
    EXPECT_EQ(JudgeAgainstBand(120, band, metric), BandVerdict::kBetter);
  }
  // Taking longer to reach the target is the regression.
  EXPECT_FALSE(HigherIsBetter(RegressMetric::kTimeToTarget));
  EXPECT_EQ(JudgeAgainstBand(120, band, RegressMetric::kTimeToTarget),
            BandVerdict::kWorse);
  EXPECT_EQ(JudgeAgainstBand(80, band, RegressMetric::kTimeToTarget),
            BandVerdict::kBetter);
  EXPECT_EQ(JudgeAgainstBand(110, band, RegressMetric::kTimeToTarget),
            BandVerdict::kWithin);
}

TEST(BandsOverHistory, DrawsFromMinHistoryOnAndFlagsADropBelow) {
  const std::vector<HistoryPoint> points =
      BandsOverHistory({100, 102, 98, 101, 99, 50, 100},
                       RegressMetric::kValidFlops, kDefaultRegressWindow, {});
  ASSERT_EQ(points.size(), 7u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(points[i].band.has_value()) << i;
  ASSERT_TRUE(points[5].band.has_value());
  EXPECT_TRUE(points[5].band->learned);
  EXPECT_EQ(points[5].band->center, 100);
  EXPECT_LT(points[5].band->low(), 98);
  EXPECT_GT(points[5].band->high(), 102);
  EXPECT_TRUE(points[5].regression);
  // The regression is not history: the band after it is the one before.
  ASSERT_TRUE(points[6].band.has_value());
  EXPECT_EQ(points[6].band->center, points[5].band->center);
  EXPECT_EQ(points[6].band->half_width, points[5].band->half_width);
  EXPECT_FALSE(points[6].regression);
}

TEST(BandsOverHistory, FlatHistoryGetsTheMinimumBand) {
  const std::vector<HistoryPoint> points =
      BandsOverHistory({10, 10, 10, 10, 10, 9.85, 9.7}, RegressMetric::kQuality,
                       kDefaultRegressWindow, {});
  ASSERT_TRUE(points[5].band.has_value());
  EXPECT_DOUBLE_EQ(points[5].band->HalfWidthPct(), 2);
  EXPECT_FALSE(points[5].regression) << "1.5% is inside 2%";
  EXPECT_TRUE(points[6].regression) << "3% is outside it";
}

TEST(BandsOverHistory, LearnsFromTheLastWindowGoodValuesOnly) {
  // Five old values around 1000, then five around 2000: a window of five
  // centres the last band on the new level.
  const std::vector<HistoryPoint> points = BandsOverHistory(
      {1000, 1000, 1000, 1000, 1000, 2000, 2000, 2000, 2000, 2000, 1990},
      RegressMetric::kThroughput, /*window=*/5, {});
  ASSERT_TRUE(points[10].band.has_value());
  EXPECT_EQ(points[10].band->center, 2000);
  EXPECT_EQ(points[10].band->history, 5);
  EXPECT_FALSE(points[10].regression);
  // The jump up to 2000 was better, not worse: it stayed good history.
  EXPECT_FALSE(points[5].regression);
}

TEST(BandsOverHistory, TimeToTargetRegressesUpwards) {
  const std::vector<HistoryPoint> points =
      BandsOverHistory({20, 20, 20, 20, 20, 30, 10},
                       RegressMetric::kTimeToTarget, kDefaultRegressWindow, {});
  EXPECT_TRUE(points[5].regression);
  EXPECT_FALSE(points[6].regression) << "sooner is better";
}

TEST(TimeToTargetSeconds, SumsTheEpochsUpToTheFirstThatReachedTheTarget) {
  // Reached after epoch 3 (0.71), and again after 4: the first counts.
  v1::Run run = RunWithEpochs({10, 12, 11, 9}, {0.5, -1, 0.71, 0.8});
  EXPECT_EQ(TimeToTargetSeconds(run), 33);
  EXPECT_EQ(RegressMetricValue(run, RegressMetric::kTimeToTarget), 33);
}

TEST(TimeToTargetSeconds, NoneWhenNoEpochReachedTheTarget) {
  EXPECT_EQ(TimeToTargetSeconds(RunWithEpochs({10, 10}, {0.5, 0.69})),
            std::nullopt);
  v1::Run unscored;
  unscored.add_epochs()->set_accuracy(0.9);
  EXPECT_EQ(TimeToTargetSeconds(unscored), std::nullopt);
}

TEST(EpochsToTarget, TheFirstEvaluatedEpochThatReachedTheTarget) {
  v1::Run run = RunWithEpochs({10, 12, 11, 9}, {0.5, -1, 0.71, 0.8});
  EXPECT_EQ(EpochsToTarget(run), 3);
  EXPECT_EQ(EpochsToTarget(RunWithEpochs({10, 10}, {0.5, 0.69})), std::nullopt);
}

TEST(RegressMetric, NamesRoundTripAndUnknownOnesAreNamed) {
  for (RegressMetric metric : AllRegressMetrics()) {
    EXPECT_EQ(ParseRegressMetric(RegressMetricName(metric)).value(), metric);
  }
  absl::StatusOr<RegressMetric> bad = ParseRegressMetric("speed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'speed'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("time_to_target"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500
