// Tests of the robust outlier rule and the straggler rule
// (methodology/outliers.h).
#include "methodology/outliers.h"

#include <gtest/gtest.h>

#include <vector>

namespace hpcai500 {
namespace {

TEST(Outliers, SlowNodeAmongPeersIsAnOutlierOnTheLowSide) {
  const std::vector<double> gflops = {100, 102, 98, 101, 55};
  const std::optional<Deviation> d = Deviate(55, gflops, OutlierRule{});
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->median, 100);
  EXPECT_LT(d->z, -3.5);
  EXPECT_NEAR(d->relative_change, -0.45, 1e-9);
  EXPECT_TRUE(IsOutlier(*d, BadSide::kLow, OutlierRule{}));
  // A rate far above its peers is not bad.
  EXPECT_FALSE(IsOutlier(*Deviate(180, gflops, OutlierRule{}), BadSide::kLow,
                         OutlierRule{}));
}

TEST(Outliers, EqualPeersDoNotFlagASmallWobble) {
  // MAD 0: the floor (5% of the median) keeps z finite and small for a 3%
  // drop, which is below the 20% minimum change too.
  const std::vector<double> sample = {50, 50, 50, 48.5};
  const std::optional<Deviation> d = Deviate(48.5, sample, OutlierRule{});
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(d->mad, 2.5);
  EXPECT_FALSE(IsOutlier(*d, BadSide::kLow, OutlierRule{}));
  // Half the rate of identical peers is flagged.
  EXPECT_TRUE(IsOutlier(*Deviate(25, {50, 50, 25}, OutlierRule{}),
                        BadSide::kLow, OutlierRule{}));
}

TEST(Outliers, NoisySampleNeedsALargerDeviation) {
  const std::vector<double> noisy = {100, 70, 130, 85, 115, 60};
  const std::optional<Deviation> d = Deviate(60, noisy, OutlierRule{});
  ASSERT_TRUE(d.has_value());
  EXPECT_FALSE(IsOutlier(*d, BadSide::kLow, OutlierRule{}));
}

TEST(Outliers, TooSmallOrZeroSampleGivesNoVerdict) {
  EXPECT_FALSE(Deviate(1, {1, 2}, OutlierRule{}).has_value());
  EXPECT_FALSE(Deviate(1, {0, 0, 0}, OutlierRule{}).has_value());
  OutlierRule two;
  two.min_sample = 2;
  EXPECT_TRUE(Deviate(1, {1, 2}, two).has_value());
}

TEST(Outliers, ThresholdIsTheOperators) {
  // Median 9.9, MAD 0.35 floored at 0.495: z -1.9, 14% below.
  const std::vector<double> sample = {10, 10.5, 9.5, 10.2, 9.8, 8.5};
  const Deviation d = *Deviate(8.5, sample, OutlierRule{});
  EXPECT_NEAR(d.z, -1.908, 1e-3);
  OutlierRule strict;
  strict.z_threshold = 1.5;
  strict.min_relative_change = 0.10;
  EXPECT_FALSE(IsOutlier(d, BadSide::kLow, OutlierRule{}));
  EXPECT_TRUE(IsOutlier(d, BadSide::kLow, strict));
}

TEST(Outliers, DeviationTextNamesChangeZAndMedian) {
  const Deviation d = *Deviate(25, {50, 50, 25}, OutlierRule{});
  EXPECT_EQ(DeviationText(d, "GFLOP/s"),
            "-50% (z -6.7) against the median 50 GFLOP/s of 3");
}

std::vector<RankEpochTime> Times(const std::vector<std::vector<double>>& e) {
  std::vector<RankEpochTime> times;
  for (size_t epoch = 0; epoch < e.size(); ++epoch) {
    for (size_t rank = 0; rank < e[epoch].size(); ++rank) {
      times.push_back({static_cast<int>(rank), static_cast<int>(epoch + 1),
                       e[epoch][rank]});
    }
  }
  return times;
}

TEST(Stragglers, RankSlowInEveryEpochIsAStraggler) {
  const std::vector<Straggler> found = FindStragglers(
      Times({{1.0, 1.02, 2.1}, {0.99, 1.0, 2.0}, {1.01, 1.0, 1.9}}),
      OutlierRule{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rank, 2);
  EXPECT_EQ(found[0].slow_epochs, 3);
  EXPECT_EQ(found[0].epochs, 3);
  EXPECT_GT(found[0].worst.relative_change, 1.0);
}

TEST(Stragglers, OneSlowEpochIsNotPersistent) {
  EXPECT_TRUE(FindStragglers(Times({{1.0, 1.0, 2.0},
                                    {1.0, 1.0, 1.0},
                                    {1.0, 1.01, 1.0},
                                    {1.0, 1.0, 0.99}}),
                             OutlierRule{})
                  .empty());
}

TEST(Stragglers, TwoRanksGiveNoVerdict) {
  EXPECT_TRUE(
      FindStragglers(Times({{1.0, 3.0}, {1.0, 3.0}}), OutlierRule{}).empty());
}

TEST(Stragglers, FastRankIsNotAStraggler) {
  EXPECT_TRUE(
      FindStragglers(Times({{1.0, 1.0, 0.4}, {1.0, 1.0, 0.4}}), OutlierRule{})
          .empty());
}

}  // namespace
}  // namespace hpcai500
