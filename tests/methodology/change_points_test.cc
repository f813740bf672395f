// E-Divisive change points (methodology/change_points.h) on synthetic
// histories: known steps, one outlier, a slow drift, the size's interval,
// determinism and the incremental tracker.
#include "methodology/change_points.h"

#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Normal noise from a fixed seed, by Box-Muller (std::normal_distribution
// differs between standard libraries).
class Noise {
 public:
  explicit Noise(uint64_t seed) : rng_(seed) {}
  double Next(double sd) {
    const double u1 = (rng_() + 1.0) / 18446744073709551616.0;
    const double u2 = rng_() / 18446744073709551616.0;
    return sd * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  std::mt19937_64 rng_;
};

// `levels[i]` repeated `lengths[i]` times, plus noise of `sd`.
std::vector<double> Steps(const std::vector<double>& levels,
                          const std::vector<int>& lengths, double sd,
                          uint64_t seed = 7) {
  Noise noise(seed);
  std::vector<double> values;
  for (size_t i = 0; i < levels.size(); ++i) {
    for (int j = 0; j < lengths[i]; ++j) {
      values.push_back(levels[i] + noise.Next(sd));
    }
  }
  return values;
}

std::vector<int> Indexes(const std::vector<ChangePoint>& points) {
  std::vector<int> indexes;
  for (const ChangePoint& point : points) indexes.push_back(point.index);
  return indexes;
}

TEST(ChangePoints, FindsKnownStepsAtTheirIndexes) {
  const std::vector<double> values =
      Steps({100, 90, 110}, {40, 40, 40}, /*sd=*/1);
  const std::vector<ChangePoint> points =
      DetectChangePoints(values, ChangePointOptions());
  EXPECT_THAT(Indexes(points), ElementsAre(40, 80));
  EXPECT_LT(points[0].change, 0);
  EXPECT_GT(points[1].change, 0);
  EXPECT_LE(points[0].p_value, 0.01);
  EXPECT_FALSE(points[0].gradual);
  EXPECT_FALSE(points[1].gradual);
  EXPECT_EQ(points[0].before_start, 0);
  EXPECT_EQ(points[0].after_end, 80);
  EXPECT_EQ(points[1].after_end, 120);
}

TEST(ChangePoints, TheScanFindsTheSplitTheDirectSumPrefers) {
  // A step the size of the noise: the split is wherever q peaks.
  const std::vector<double> values = Steps({10, 11}, {25, 25}, /*sd=*/1, 3);
  ChangePointOptions options;
  options.significance = 1;  // keep the best split whatever its p-value
  options.permutations = 1;
  options.min_segment = 17;  // one split: each side is then too short
  const std::vector<ChangePoint> points = DetectChangePoints(values, options);
  ASSERT_EQ(points.size(), 1u);
  int best = -1;
  for (int split = 17; split <= 33; ++split) {
    if (best < 0 ||
        EDivisiveStatistic(values, split) > EDivisiveStatistic(values, best)) {
      best = split;
    }
  }
  EXPECT_EQ(points[0].index, best);
  EXPECT_NEAR(points[0].statistic, EDivisiveStatistic(values, best),
              1e-9 * std::abs(points[0].statistic));
}

TEST(ChangePoints, OneOutlierIsNotAChange) {
  std::vector<double> values = Steps({100}, {60}, /*sd=*/1);
  values[30] = 160;
  EXPECT_THAT(DetectChangePoints(values, ChangePointOptions()), IsEmpty());
  // Nor one at the end, where a night's bad run lands first.
  values[30] = 100;
  values.back() = 40;
  EXPECT_THAT(DetectChangePoints(values, ChangePointOptions()), IsEmpty());
}

TEST(ChangePoints, NoiseAloneAndAConstantHaveNoChange) {
  EXPECT_THAT(DetectChangePoints(Steps({100}, {200}, 2), ChangePointOptions()),
              IsEmpty());
  EXPECT_THAT(
      DetectChangePoints(std::vector<double>(50, 3.0), ChangePointOptions()),
      IsEmpty());
  // Too short for two segments.
  EXPECT_THAT(DetectChangePoints({1, 1, 1, 9, 9, 9}, ChangePointOptions()),
              IsEmpty());
}

TEST(ChangePoints, ASlowDriftIsReportedAsGradualChangesDownward) {
  Noise noise(11);
  std::vector<double> values;
  for (int i = 0; i < 200; ++i) {
    values.push_back(100 - 20.0 * i / 199 + noise.Next(0.5));
  }
  const std::vector<ChangePoint> points =
      DetectChangePoints(values, ChangePointOptions());
  ASSERT_FALSE(points.empty());
  for (const ChangePoint& point : points) {
    EXPECT_LT(point.change, 0) << point.index;
    EXPECT_TRUE(point.gradual) << point.index;
  }
}

TEST(ChangePoints, TheSizeCarriesANormalIntervalAroundTheStep) {
  const std::vector<double> values = Steps({100, 90}, {30, 30}, /*sd=*/1);
  const std::vector<ChangePoint> points =
      DetectChangePoints(values, ChangePointOptions());
  ASSERT_EQ(points.size(), 1u);
  const ChangePoint& point = points[0];
  EXPECT_NEAR(point.mean_before, 100, 0.6);
  EXPECT_NEAR(point.mean_after, 90, 0.6);
  EXPECT_LT(point.change_low, -10 + 0.01);
  EXPECT_GT(point.change_high, -10 - 0.01);
  EXPECT_LT(point.change_low, point.change);
  EXPECT_GT(point.change_high, point.change);
  // 1.96 x sqrt(1/30 + 1/30) ~ 0.5 either side.
  EXPECT_NEAR(point.change_high - point.change_low, 1.0, 0.4);
  EXPECT_NEAR(point.change_pct, -10, 0.8);
  EXPECT_LT(point.change_pct_low, point.change_pct);
}

TEST(ChangePoints, TheSameHistoryGivesTheSameAnswer) {
  const std::vector<double> values =
      Steps({5, 5.4, 5.1, 4.8}, {25, 17, 30, 20}, /*sd=*/0.3, 5);
  const std::vector<ChangePoint> first =
      DetectChangePoints(values, ChangePointOptions());
  const std::vector<ChangePoint> second =
      DetectChangePoints(values, ChangePointOptions());
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].index, second[i].index);
    EXPECT_EQ(first[i].p_value, second[i].p_value);
    EXPECT_EQ(first[i].statistic, second[i].statistic);
  }
}

TEST(ChangePointTracker, AppendFindsTheStepOnceEnoughRunsFollowIt) {
  const std::vector<double> values = Steps({100, 90}, {40, 20}, /*sd=*/1);
  ChangePointTracker tracker{ChangePointOptions()};
  std::vector<int> revealed_at;
  for (size_t i = 0; i < values.size(); ++i) {
    for (const ChangePoint& point : tracker.Append(values[i])) {
      // Found as soon as it can be, it may stand a little early...
      EXPECT_NEAR(point.index, 40, 3);
      revealed_at.push_back(static_cast<int>(i));
    }
  }
  // ...once, a few runs after the step (a minimum segment after the split)...
  ASSERT_EQ(revealed_at.size(), 1u);
  EXPECT_GT(revealed_at[0], 40);
  EXPECT_LT(revealed_at[0], 40 + 2 * ChangePointOptions().min_segment);
  // ...and the values after it move it to where the step is.
  EXPECT_THAT(Indexes(tracker.ChangePoints()), ElementsAre(40));
  // The batch search over the same history agrees.
  EXPECT_THAT(Indexes(DetectChangePoints(values, ChangePointOptions())),
              ElementsAre(40));
}

TEST(ChangePointTracker, AppendAfterResetSearchesOnlyTheLastSegment) {
  ChangePointTracker tracker{ChangePointOptions()};
  tracker.Reset(Steps({100, 90}, {40, 40}, /*sd=*/1));
  ASSERT_THAT(Indexes(tracker.ChangePoints()), ElementsAre(40));
  const std::vector<double> more = Steps({120}, {30}, /*sd=*/1, 9);
  for (double value : more) tracker.Append(value);
  EXPECT_THAT(Indexes(tracker.ChangePoints()), ElementsAre(40, 80));
  EXPECT_EQ(tracker.values().size(), 110u);
}

}  // namespace
}  // namespace hpcai500
