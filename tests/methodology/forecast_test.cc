#include "methodology/forecast.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

// Epochs 1..`epochs` of q(e) = a - b * exp(-c * e) plus `noise` times a
// fixed pseudo-random sequence in [-1, 1]: an exponential saturation, not the
// power law the forecast fits, so the tests do not grade the fit on its own
// family.
std::vector<CurvePoint> Saturating(int epochs, double a, double b, double c,
                                   double noise = 0) {
  std::vector<CurvePoint> curve;
  for (int e = 1; e <= epochs; ++e) {
    const double wobble = std::sin(12.9898 * e) * noise;
    curve.push_back({e, a - b * std::exp(-c * e) + wobble});
  }
  return curve;
}

TEST(ForecastQuality, FewerPointsThanNeededIsNotEnoughEpochsYet) {
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality(Saturating(2, 0.9, 0.5, 0.5), 0.8, 20);
  ASSERT_FALSE(forecast.ok());
  EXPECT_EQ(forecast.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(forecast.status().message().find("not enough epochs yet"),
            std::string::npos);
}

TEST(ForecastQuality, CurveSaturatingBelowTheTargetIsUnlikely) {
  // Levels off at 0.70; the target is 0.80.
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality(Saturating(6, 0.70, 0.5, 0.8), 0.80, 30);
  ASSERT_TRUE(forecast.ok()) << forecast.status();
  EXPECT_LT(forecast->probability(), 0.1);
  EXPECT_EQ(forecast->reach_epoch(), 0);
  EXPECT_LT(forecast->final_quality(), 0.78);
  EXPECT_EQ(forecast->epoch(), 6);
  EXPECT_EQ(forecast->points(), 6);
  EXPECT_EQ(forecast->epochs(), 30);
}

TEST(ForecastQuality, CurveHeadingOverTheTargetIsLikelyWithTheEpochItCrosses) {
  // Levels off at 0.95, crossing 0.85 near epoch 9 (0.95 - 0.6 e^(-0.2e)).
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality(Saturating(5, 0.95, 0.6, 0.2), 0.85, 30);
  ASSERT_TRUE(forecast.ok()) << forecast.status();
  EXPECT_GT(forecast->probability(), 0.75);
  EXPECT_GT(forecast->reach_epoch(), 5);
  EXPECT_LE(forecast->reach_epoch(), 20);
  EXPECT_GT(forecast->final_quality(), 0.85);
}

TEST(ForecastQuality, NoisyPointsKeepTheForecastOnItsSide) {
  // Measured with +-0.02 of noise: levels off at 0.70 (target 0.75), or
  // heads to 0.95 (target 0.8).
  const auto noisy =
      ForecastQuality(Saturating(8, 0.70, 0.4, 0.5, 0.02), 0.75, 40);
  ASSERT_TRUE(noisy.ok());
  EXPECT_LT(noisy->probability(), 0.3);
  EXPECT_EQ(noisy->reach_epoch(), 0);
  const auto rising =
      ForecastQuality(Saturating(8, 0.95, 0.6, 0.3, 0.02), 0.8, 40);
  ASSERT_TRUE(rising.ok());
  EXPECT_GT(rising->probability(), 0.8);
}

TEST(ForecastQuality, ThreePointsGiveAnUncertainForecast) {
  // Still climbing fast after three epochs: the asymptote is barely pinned,
  // so the forecast may not claim certainty either way.
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality({{1, 0.30}, {2, 0.45}, {3, 0.55}}, 0.8, 30);
  ASSERT_TRUE(forecast.ok()) << forecast.status();
  EXPECT_GT(forecast->probability(), 0.05);
  EXPECT_LT(forecast->probability(), 0.95);
}

TEST(ForecastQuality, TargetAlreadyMeasuredIsReachedAtThatEpoch) {
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality({{1, 0.6}, {2, 0.8}, {3, 0.85}, {4, 0.86}}, 0.8, 10);
  ASSERT_TRUE(forecast.ok()) << forecast.status();
  EXPECT_EQ(forecast->reach_epoch(), 2);
  EXPECT_GT(forecast->probability(), 0.9);
}

TEST(ForecastQuality, SameCurveGivesTheSameForecast) {
  const auto first =
      ForecastQuality(Saturating(5, 0.8, 0.5, 0.3, 0.01), 0.78, 25);
  const auto second =
      ForecastQuality(Saturating(5, 0.8, 0.5, 0.3, 0.01), 0.78, 25);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->probability(), second->probability());
  EXPECT_EQ(first->final_quality(), second->final_quality());
}

TEST(ForecastQuality, RefusesABudgetBelowTheLastEpoch) {
  EXPECT_EQ(
      ForecastQuality(Saturating(5, 0.8, 0.5, 0.3), 0.78, 4).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(QualityCurve, KeepsEvaluatedEpochsInOrder) {
  v1::Run run;
  for (int e : {3, 1, 2}) {
    v1::EpochSummary* epoch = run.add_epochs();
    epoch->set_epoch(e);
    epoch->set_accuracy(e == 2 ? -1 : 0.1 * e);
  }
  const std::vector<CurvePoint> curve = QualityCurve(run.epochs());
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_EQ(curve[0].epoch, 1);
  EXPECT_EQ(curve[1].epoch, 3);
}

TEST(ForecastText, SaysTheEpochAndTheChanceOrThatItIsUnlikely) {
  v1::Forecast forecast;
  forecast.set_target(0.763);
  forecast.set_reach_epoch(71);
  forecast.set_probability(0.8);
  forecast.set_final_quality(0.77);
  forecast.set_epoch(20);
  forecast.set_epochs(90);
  EXPECT_EQ(ForecastText(forecast).substr(0, 37),
            "reaches 0.763 by epoch 71, 80% likely");
  forecast.set_reach_epoch(0);
  forecast.set_probability(0.12);
  forecast.set_node_hours_saved(2.5);
  const std::string text = ForecastText(forecast);
  EXPECT_EQ(text.substr(0, 29), "unlikely to reach 0.763 (12%)");
  EXPECT_NE(text.find("; 2.5 node-hours saved"), std::string::npos);
}

TEST(IsHopeless, OnlyWhenAskedAfterMinEpochsAndBelowTheProbability) {
  v1::RunSpec spec;
  v1::Forecast forecast;
  forecast.set_points(4);
  forecast.set_epoch(4);
  forecast.set_epochs(20);
  forecast.set_probability(0.05);
  EXPECT_FALSE(IsHopeless(spec, forecast));  // not asked
  spec.set_abort_if_hopeless(0.1);
  spec.set_min_epochs(5);
  EXPECT_FALSE(IsHopeless(spec, forecast));  // before min_epochs
  forecast.set_epoch(5);
  EXPECT_TRUE(IsHopeless(spec, forecast));
  forecast.set_probability(0.1);
  EXPECT_FALSE(IsHopeless(spec, forecast));  // not below
  forecast.set_probability(0.05);
  forecast.set_epochs(5);
  EXPECT_FALSE(IsHopeless(spec, forecast));  // nothing left to save
}

TEST(NodeHoursLeft, NodesTimesEpochsLeftTimesTheMeanEpoch) {
  v1::Run run;
  run.mutable_spec()->set_nodes(2);
  run.mutable_spec()->set_epochs(10);
  for (double seconds : {1700.0, 1900.0}) {
    run.add_epochs()->set_seconds(seconds);
  }
  EXPECT_DOUBLE_EQ(NodeHoursLeft(run, 2), 2 * 8 * 1800.0 / 3600.0);
  EXPECT_EQ(NodeHoursLeft(run, 10), 0);
}

}  // namespace
}  // namespace hpcai500
