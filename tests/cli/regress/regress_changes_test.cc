// What `regress` says beside the series' change points
// (cli/regress/regress_changes.h): start of a change, part of an earlier
// one, or noise, carried into a regressed metric's reason.
#include "cli/regress/regress_changes.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

v1::ChangePoint Change(const std::string& metric, int64_t run_id,
                       int runs_after) {
  v1::ChangePoint change;
  change.set_metric(metric);
  change.set_run_id(run_id);
  change.set_runs_after(runs_after);
  change.set_change_pct(-8.1);
  change.set_change_pct_low(-9.0);
  change.set_change_pct_high(-7.2);
  change.set_regression(true);
  change.set_attribution("libtorch 2.11.0 -> 2.12.0 in every run after");
  return change;
}

TEST(ChangeContextOf, AChangeBeginningAtTonightsRunIsItsStart) {
  const ChangeContext context =
      ChangeContextOf({Change("throughput", 41, 5)}, RegressMetric::kThroughput,
                      {41}, /*window=*/10);
  EXPECT_EQ(context.kind, ChangeContextKind::kStart);
  EXPECT_EQ(context.text,
            "start of a change: throughput -8.1% [-9.0%, -7.2%] at run 41 "
            "(regression, step): libtorch 2.11.0 -> 2.12.0 in every run after");
}

TEST(ChangeContextOf, ARecentEarlierChangeIsPartOfItAnOldOneIsNot) {
  const std::vector<v1::ChangePoint> changes = {Change("throughput", 30, 8),
                                                Change("throughput", 10, 20),
                                                Change("quality", 35, 7)};
  const ChangeContext recent =
      ChangeContextOf(changes, RegressMetric::kThroughput, {42}, /*window=*/10);
  EXPECT_EQ(recent.kind, ChangeContextKind::kEarlier);
  EXPECT_THAT(recent.text,
              StartsWith("part of the change that began at run 30: "));
  // 8 runs after it, but the window is 5: too old to explain tonight.
  const ChangeContext old =
      ChangeContextOf(changes, RegressMetric::kThroughput, {42}, /*window=*/5);
  EXPECT_EQ(old.kind, ChangeContextKind::kNoise);
  EXPECT_EQ(old.text,
            "noise: no change point of throughput in the last 5 runs");
  // Another metric's changes are not this one's.
  EXPECT_EQ(ChangeContextOf(changes, RegressMetric::kValidFlops, {42}, 10).kind,
            ChangeContextKind::kNoise);
}

TEST(AddChangeContexts, ARegressedMetricsReasonCarriesItsContext) {
  RegressReport report;
  report.run_ids = {42};
  MetricComparison regressed;
  regressed.metric = RegressMetric::kThroughput;
  regressed.verdict = RegressVerdict::kRegressed;
  regressed.reason = "throughput fell 8%";
  MetricComparison ok;
  ok.metric = RegressMetric::kQuality;
  ok.verdict = RegressVerdict::kOk;
  report.metrics = {regressed, ok};
  AddChangeContexts({Change("throughput", 40, 3)}, /*window=*/10, report);
  EXPECT_THAT(report.metrics[0].reason,
              HasSubstr("throughput fell 8%; part of the change that began "
                        "at run 40"));
  EXPECT_THAT(report.metrics[0].change_context, StartsWith("part of"));
  EXPECT_EQ(report.metrics[1].reason, "");
  EXPECT_THAT(report.metrics[1].change_context, StartsWith("noise"));
}

}  // namespace
}  // namespace hpcai500
