#include "cli/regress/regress.h"

#include <string>
#include <vector>

#include "cli/regress/regress_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/regress/test_runs.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::RunWithEpochs;
using ::hpcai500::testing::ScoredRun;
using ::hpcai500::testing::SmokeSpec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const MetricComparison& Find(const RegressReport& report,
                             RegressMetric metric) {
  for (const MetricComparison& comparison : report.metrics) {
    if (comparison.metric == metric) return comparison;
  }
  ADD_FAILURE() << "no " << RegressMetricName(metric) << " in the report";
  static const MetricComparison kNone;
  return kNone;
}

RegressVerdict ThroughputVerdict(double baseline, double value,
                                 double tolerance_pct) {
  RegressOptions options;
  options.tolerance_pct = tolerance_pct;
  options.metrics = {RegressMetric::kThroughput};
  return CompareRegress({ScoredRun(9, value)}, {ScoredRun(1, baseline)},
                        options)
      .metrics.at(0)
      .verdict;
}

// Good runs 1..n of SmokeSpec with these throughputs.
std::vector<v1::Run> History(const std::vector<double>& throughputs) {
  std::vector<v1::Run> runs;
  for (size_t i = 0; i < throughputs.size(); ++i) {
    runs.push_back(ScoredRun(static_cast<int64_t>(throughputs.size() - i),
                             throughputs[i]));
  }
  return runs;
}

TEST(SelectRegressSeries, KeepsTheNewestScoredRunsOfTheSameNameAndShape) {
  std::vector<v1::Run> runs;
  for (int64_t id = 1; id <= 8; ++id) runs.push_back(ScoredRun(id, 100));
  runs[1].mutable_spec()->set_seed(99);             // 2: seed may differ
  runs[2].mutable_spec()->set_batch_size(128);      // 3: another shape
  runs[3].mutable_spec()->set_name("other");        // 4: another benchmark
  runs[4].set_state(v1::RUN_STATE_FAILED);          // 5: failed
  runs[5].clear_score();                            // 6: unscored
  runs[6].mutable_spec()->set_compression("fp16");  // 7: another shape
  runs[7].mutable_spec()->set_repetitions(3);       // 8: repetitions may differ
  v1::Run invalidated = ScoredRun(9, 100);  // 9: its result was taken back
  invalidated.set_invalidated_by("admin");
  runs.push_back(invalidated);
  std::vector<int64_t> ids;
  for (const v1::Run& run : SelectRegressSeries(runs, SmokeSpec(), 5)) {
    ids.push_back(run.id());
  }
  EXPECT_THAT(ids, ElementsAre(8, 2, 1));
}

TEST(SelectRegressSeries, WindowKeepsTheNewest) {
  std::vector<v1::Run> runs;
  for (int64_t id : {3, 9, 1, 7, 5}) runs.push_back(ScoredRun(id, 100));
  std::vector<int64_t> ids;
  for (const v1::Run& run : SelectRegressSeries(runs, SmokeSpec(), 2)) {
    ids.push_back(run.id());
  }
  EXPECT_THAT(ids, ElementsAre(9, 7));
}

TEST(SameRegressSeries, EveryShapeFieldSeparatesSeries) {
  const v1::RunSpec base = SmokeSpec();
  std::vector<v1::RunSpec> changed(12, base);
  changed[0].set_name("x");
  changed[1].set_workload("extreme_weather");
  changed[2].set_config("fashion_mnist");
  changed[3].set_level("free");
  changed[4].set_nodes(2);
  changed[5].set_ranks_per_node(2);
  changed[6].set_device("cuda");
  changed[7].set_batch_size(32);
  changed[8].set_precision("bf16");
  changed[9].set_compression("powersgd");
  changed[10].set_epochs(2);
  changed[11].set_system("other");
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_FALSE(SameRegressSeries(base, changed[i])) << i;
  }
  EXPECT_TRUE(SameRegressSeries(base, base));
}

TEST(CompareRegress, BaselineIsTheMedianOfTheSeries) {
  RegressOptions options;
  RegressReport report = CompareRegress(
      {ScoredRun(9, 200)},
      {ScoredRun(3, 100), ScoredRun(2, 300), ScoredRun(1, 200)}, options);
  const MetricComparison& throughput = Find(report, RegressMetric::kThroughput);
  ASSERT_TRUE(throughput.baseline.has_value());
  EXPECT_EQ(*throughput.baseline, 200);
  EXPECT_FALSE(throughput.from_reference);
  EXPECT_EQ(throughput.value, 200);
  EXPECT_EQ(throughput.verdict, RegressVerdict::kOk);
  EXPECT_THAT(report.baseline_runs, ElementsAre(3, 2, 1));
  EXPECT_FALSE(report.regressed());
}

// The repetitions' spread, as the leaderboard judges it: 2% CV by default.

TEST(CompareRegress, RepetitionsThatVaryMoreThanMaxCvAreUnrepeatable) {
  RegressOptions options;
  const std::vector<v1::Run> baseline = {ScoredRun(1, 100)};
  // 96, 100, 104 samples/s: a 4% CV.
  RegressReport noisy =
      CompareRegress({ScoredRun(7, 96), ScoredRun(8, 100), ScoredRun(9, 104)},
                     baseline, options);
  const MetricComparison& throughput = Find(noisy, RegressMetric::kThroughput);
  ASSERT_TRUE(throughput.spread_pct.has_value());
  EXPECT_NEAR(*throughput.spread_pct, 4, 1e-9);
  EXPECT_TRUE(throughput.unrepeatable);
  EXPECT_FALSE(Find(noisy, RegressMetric::kQuality).unrepeatable)
      << "only throughput-like metrics are marked";
  EXPECT_THAT(FormatRegressReport(noisy),
              HasSubstr("unrepeatable throughput: its 3 repetitions vary by "
                        "4.0% (CV, above --max-cv)"));
  const nlohmann::json json = nlohmann::json::parse(RegressReportJson(noisy));
  EXPECT_EQ(json["metrics"][0]["metric"], "throughput");
  EXPECT_EQ(json["metrics"][0]["unrepeatable"], true);

  options.max_cv_pct = 5;
  EXPECT_FALSE(Find(CompareRegress({ScoredRun(7, 96), ScoredRun(8, 100),
                                    ScoredRun(9, 104)},
                                   baseline, options),
                    RegressMetric::kThroughput)
                   .unrepeatable);
  // One run has no spread.
  EXPECT_FALSE(Find(CompareRegress({ScoredRun(9, 100)}, baseline, options),
                    RegressMetric::kThroughput)
                   .spread_pct.has_value());
}

TEST(CompareRegress, DefaultMetricsAreAllButFlops) {
  RegressReport report =
      CompareRegress({ScoredRun(9, 200)}, {ScoredRun(1, 200)}, {});
  std::vector<std::string> names;
  for (const MetricComparison& comparison : report.metrics) {
    names.push_back(RegressMetricName(comparison.metric));
  }
  EXPECT_THAT(names, ElementsAre("throughput", "valid_flops", "quality",
                                 "time_to_target"));
}

TEST(CompareRegress, ADropOfExactlyTheToleranceIsStillOk) {
  EXPECT_EQ(ThroughputVerdict(100, 95, 5), RegressVerdict::kOk);
  EXPECT_EQ(ThroughputVerdict(100, 94.5, 5), RegressVerdict::kRegressed);
  EXPECT_EQ(ThroughputVerdict(100, 105, 5), RegressVerdict::kOk);
  EXPECT_EQ(ThroughputVerdict(100, 105.5, 5), RegressVerdict::kImproved);
  EXPECT_EQ(ThroughputVerdict(100, 100, 0), RegressVerdict::kOk);
  EXPECT_EQ(ThroughputVerdict(100, 99.5, 0), RegressVerdict::kRegressed);
  EXPECT_EQ(ThroughputVerdict(100, 1, 99), RegressVerdict::kOk);
}

TEST(CompareRegress, RegressionSaysByHowMuch) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput};
  RegressReport report =
      CompareRegress({ScoredRun(9, 50)}, {ScoredRun(1, 100)}, options);
  EXPECT_TRUE(report.regressed());
  EXPECT_EQ(report.metrics[0].reason,
            "dropped 50.0% (100.0 samples/s -> 50.0 samples/s), outside the "
            "band \u00b15.0% fixed (--tolerance): 1 good run, fewer than 5");
  ASSERT_TRUE(report.metrics[0].change_pct.has_value());
  EXPECT_EQ(*report.metrics[0].change_pct, -50);
}

TEST(CompareRegress, QualityRegressesWhenTheTargetIsLost) {
  // The same quality within tolerance, but the target was lost.
  RegressReport lost =
      CompareRegress({ScoredRun(9, 100, 1e9, 0.69, /*reached=*/false)},
                     {ScoredRun(1, 100, 1e9, 0.70, /*reached=*/true)}, {});
  const MetricComparison& quality = Find(lost, RegressMetric::kQuality);
  EXPECT_EQ(quality.verdict, RegressVerdict::kRegressed);
  EXPECT_THAT(quality.reason, HasSubstr("the baseline reached its target"));

  // A baseline that missed the target itself does not demand it.
  RegressReport never =
      CompareRegress({ScoredRun(9, 100, 1e9, 0.69, /*reached=*/false)},
                     {ScoredRun(1, 100, 1e9, 0.69, /*reached=*/false)}, {});
  EXPECT_EQ(Find(never, RegressMetric::kQuality).verdict, RegressVerdict::kOk);

  // Most of the series reached it: the majority decides.
  RegressReport most = CompareRegress(
      {ScoredRun(9, 100, 1e9, 0.69, /*reached=*/false)},
      {ScoredRun(3, 100, 1e9, 0.71, true), ScoredRun(2, 100, 1e9, 0.69, false),
       ScoredRun(1, 100, 1e9, 0.72, true)},
      {});
  EXPECT_EQ(Find(most, RegressMetric::kQuality).verdict,
            RegressVerdict::kRegressed);
}

TEST(CompareRegress, ReferencesReplaceTheSeriesForTheirMetrics) {
  RegressOptions options;
  options.references[RegressMetric::kThroughput] = 1e12;
  options.references[RegressMetric::kFlops] = 1e9;  // not a default metric
  RegressReport report = CompareRegress({ScoredRun(9, 200, /*valid=*/1e9)},
                                        {ScoredRun(1, 200, 1e9)}, options);
  const MetricComparison& throughput = Find(report, RegressMetric::kThroughput);
  EXPECT_TRUE(throughput.from_reference);
  EXPECT_EQ(*throughput.baseline, 1e12);
  EXPECT_EQ(throughput.verdict, RegressVerdict::kRegressed);
  // The reference's metric is judged too: flops 2e9 against 1e9.
  EXPECT_EQ(Find(report, RegressMetric::kFlops).verdict,
            RegressVerdict::kImproved);
  // The others still come from the series.
  EXPECT_FALSE(Find(report, RegressMetric::kValidFlops).from_reference);
  EXPECT_EQ(Find(report, RegressMetric::kValidFlops).verdict,
            RegressVerdict::kOk);
}

TEST(CompareRegress, ReferencesWorkWithoutASeries) {
  RegressOptions options;
  options.references[RegressMetric::kQuality] = 0.9;
  RegressReport report = CompareRegress(
      {ScoredRun(9, 200, 1e9, 0.8, /*reached=*/false)}, {}, options);
  EXPECT_EQ(Find(report, RegressMetric::kQuality).verdict,
            RegressVerdict::kRegressed);
  EXPECT_EQ(Find(report, RegressMetric::kThroughput).verdict,
            RegressVerdict::kNoBaseline);
}

TEST(CompareRegress, NoBaselineStartsTheSeriesAndPasses) {
  RegressReport report = CompareRegress({ScoredRun(9, 200)}, {}, {});
  EXPECT_FALSE(report.regressed());
  for (const MetricComparison& comparison : report.metrics) {
    EXPECT_EQ(comparison.verdict, RegressVerdict::kNoBaseline);
    EXPECT_FALSE(comparison.baseline.has_value());
  }
  const std::string text = FormatRegressReport(report);
  EXPECT_THAT(text, HasSubstr("no baseline: run 9 starts the series\n"));
  EXPECT_THAT(text, HasSubstr("no regression"));
}

TEST(CompareRegress, NoisyHistoryToleratesWhatAStableOneFlags) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput};
  // The same 25% drop from the same promoted baseline of 2000 samples/s.
  const std::vector<v1::Run> promoted = {ScoredRun(50, 2000)};
  const std::vector<v1::Run> current = {ScoredRun(99, 1500)};
  RegressReport noisy = CompareRegress(
      current, promoted, History({1052, 2347, 1500, 1900, 1210, 2100}),
      RegressBaselineKind::kPromoted, options);
  RegressReport stable = CompareRegress(
      current, promoted, History({2000, 2010, 1990, 2005, 1995, 2000}),
      RegressBaselineKind::kPromoted, options);
  const MetricComparison& wide = noisy.metrics.at(0);
  const MetricComparison& tight = stable.metrics.at(0);
  ASSERT_TRUE(wide.band.has_value());
  ASSERT_TRUE(tight.band.has_value());
  EXPECT_TRUE(wide.band->learned);
  EXPECT_GT(wide.band->HalfWidthPct(), 25);
  EXPECT_LT(tight.band->HalfWidthPct(), 3);
  EXPECT_EQ(wide.verdict, RegressVerdict::kOk);
  EXPECT_EQ(tight.verdict, RegressVerdict::kRegressed);
  EXPECT_THAT(tight.evidence, ElementsAre(6, 5, 4, 3, 2, 1));
  EXPECT_THAT(tight.reason,
              HasSubstr("dropped 25.0% (2000.0 samples/s -> 1500.0 "
                        "samples/s), outside the band \u00b1"));
  EXPECT_THAT(tight.reason,
              HasSubstr("learned (robust z 3) from 6 good runs 6, 5, 4, 3, "
                        "2, 1"));
  EXPECT_THAT(FormatRegressReport(stable), HasSubstr("promoted run 50"));
}

TEST(CompareRegress, TimeToTargetRegressesWhenItGrowsOrIsNeverReached) {
  RegressOptions options;
  options.metrics = {RegressMetric::kTimeToTarget};
  // The baseline reached the target after epoch 2 of 10 s: 20 s.
  const std::vector<v1::Run> baseline = {RunWithEpochs(1, 10, 2)};
  RegressReport slower =
      CompareRegress({RunWithEpochs(9, 15, 2)}, baseline, options);
  const MetricComparison& grown = slower.metrics.at(0);
  EXPECT_EQ(grown.baseline, 20);
  EXPECT_EQ(grown.value, 30);
  EXPECT_EQ(grown.verdict, RegressVerdict::kRegressed);
  EXPECT_THAT(grown.reason, HasSubstr("rose 50.0% (20.0 s -> 30.0 s)"));
  // Sooner is better.
  EXPECT_EQ(CompareRegress({RunWithEpochs(9, 10, 1)}, baseline, options)
                .metrics.at(0)
                .verdict,
            RegressVerdict::kImproved);
  RegressReport never =
      CompareRegress({RunWithEpochs(9, 10, 0)}, baseline, options);
  EXPECT_EQ(never.metrics.at(0).verdict, RegressVerdict::kRegressed);
  EXPECT_THAT(never.metrics.at(0).reason,
              HasSubstr("no run reached the target; the baseline did in "
                        "20.0 s"));
  EXPECT_THAT(FormatRegressReport(never), HasSubstr("not reached"));
}

TEST(CompareRegress, FileValuesAreTheBaselineAndReferencesWinOverThem) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput, RegressMetric::kQuality};
  options.references[RegressMetric::kQuality] = 0.5;
  RegressReport report = CompareRegress(
      {ScoredRun(9, 100)}, {}, {}, RegressBaselineKind::kFile, options,
      {{RegressMetric::kThroughput, 200}, {RegressMetric::kQuality, 0.99}});
  EXPECT_EQ(Find(report, RegressMetric::kThroughput).baseline, 200);
  EXPECT_EQ(Find(report, RegressMetric::kThroughput).verdict,
            RegressVerdict::kRegressed);
  EXPECT_EQ(Find(report, RegressMetric::kQuality).baseline, 0.5);
  EXPECT_THAT(FormatRegressReport(report), HasSubstr("  file  "));
}

}  // namespace
}  // namespace hpcai500
