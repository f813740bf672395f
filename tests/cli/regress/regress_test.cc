#include "cli/regress/regress.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/regress/regress_flags.h"
#include "cli/regress/regress_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

v1::RunSpec SmokeSpec() {
  v1::RunSpec spec;
  spec.set_name("fmnist-nightly");
  spec.set_workload("image_classification");
  spec.set_config("fashion_mnist_smoke");
  spec.set_level("system");
  spec.set_nodes(1);
  spec.set_ranks_per_node(1);
  spec.set_device("cpu");
  spec.set_batch_size(64);
  spec.set_precision("fp32");
  spec.set_compression("none");
  spec.set_epochs(1);
  spec.set_system("ci-cpu");
  spec.set_seed(7);
  return spec;
}

// A succeeded run of SmokeSpec: `throughput` samples/s over 10 s of training.
v1::Run ScoredRun(int64_t id, double throughput, double valid_flops = 1e9,
                  double quality = 0.8, bool reached = true) {
  v1::Run run;
  run.set_id(id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  *run.mutable_spec() = SmokeSpec();
  v1::Score* score = run.mutable_score();
  score->set_samples(static_cast<int64_t>(throughput * 10));
  score->set_train_seconds(10);
  score->set_flops(2 * valid_flops);
  score->set_valid_flops(valid_flops);
  score->set_quality(quality);
  score->set_target(0.7);
  score->set_reached_target(reached);
  return run;
}

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

// ScoredRun with epochs of `epoch_seconds` each, the target (0.7) first
// reached after epoch `reached_after` (0: never).
v1::Run RunWithEpochs(int64_t id, double epoch_seconds, int reached_after) {
  v1::Run run = ScoredRun(id, 100);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    v1::EpochSummary* summary = run.add_epochs();
    summary->set_epoch(epoch);
    summary->set_seconds(epoch_seconds);
    summary->set_accuracy(reached_after > 0 && epoch >= reached_after ? 0.75
                                                                      : 0.5);
  }
  return run;
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

// Checks that `xml` is well-formed in the subset JUnit uses: balanced,
// properly nested elements, quoted attributes, escaped text. Returns "" or
// what is wrong.
std::string WellFormedProblem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  if (absl::StartsWith(xml, "<?xml")) i = xml.find("?>") + 2;
  bool root_closed = false;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '>') return "raw '>' in text";
      if (xml[i] == '&') {
        size_t end = xml.find(';', i);
        std::string entity = xml.substr(i, end - i + 1);
        if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" &&
            entity != "&quot;" && entity != "&apos;" && entity != "&#10;") {
          return "bad entity at " + std::to_string(i);
        }
      }
      if (open.empty() && !absl::ascii_isspace(xml[i])) {
        return "text outside the root element";
      }
      ++i;
      continue;
    }
    size_t end = i + 1;
    bool quoted = false;
    while (end < xml.size() && (quoted || xml[end] != '>')) {
      if (xml[end] == '"') quoted = !quoted;
      if (quoted && (xml[end] == '<' || xml[end] == '>')) {
        return "raw '<' or '>' in an attribute";
      }
      ++end;
    }
    if (end >= xml.size()) return "unterminated tag";
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        return "</" + tag.substr(1) + "> closes nothing open";
      }
      open.pop_back();
      root_closed = open.empty();
      continue;
    }
    if (root_closed) return "second root element";
    std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
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

TEST(FormatRegressReport, NamesTheBaselineRunsAndTheRegressions) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput, RegressMetric::kQuality};
  RegressReport report = CompareRegress(
      {ScoredRun(9, 100)}, {ScoredRun(5, 200), ScoredRun(4, 200)}, options);
  const std::string text = FormatRegressReport(report);
  EXPECT_THAT(text, HasSubstr("throughput  200.0 samples/s  runs 5, 4  "
                              "100.0 samples/s  -50.0%  \u00b15.0% fixed, 2 "
                              "runs  REGRESSED\n"));
  EXPECT_THAT(text, HasSubstr("quality              0.8000  runs 5, 4"));
  EXPECT_THAT(text, HasSubstr("REGRESSED throughput: dropped 50.0% (200.0 "
                              "samples/s -> 100.0 samples/s), outside the "
                              "band \u00b15.0% fixed"));
}

TEST(FormatRegressReport, SaysWhenTheBaselineFileHoldsNothingOfTheSpec) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput};
  RegressReport report = CompareRegress({ScoredRun(9, 100)}, {}, {},
                                        RegressBaselineKind::kFile, options);
  EXPECT_EQ(report.metrics.at(0).verdict, RegressVerdict::kNoBaseline);
  EXPECT_THAT(FormatRegressReport(report),
              HasSubstr("no baseline: the baseline file holds no value of "
                        "fmnist-nightly\n"));
  EXPECT_THAT(RegressJUnitXml("s", {report}),
              HasSubstr("<skipped message=\"no baseline: the baseline file "
                        "holds no value of fmnist-nightly\"/>"));
  report =
      CompareRegress({ScoredRun(9, 100)}, {}, {}, RegressBaselineKind::kFile,
                     options, {{RegressMetric::kThroughput, 100}});
  EXPECT_THAT(FormatRegressReport(report), Not(HasSubstr("no baseline")));
}

TEST(FormatRegressReport, OneBaselineRunIsNamedAndStartsNoSeries) {
  RegressOptions options;
  options.baseline_run = 4;
  RegressReport report =
      CompareRegress({ScoredRun(9, 100)}, {ScoredRun(4, 100)}, options);
  const std::string text = FormatRegressReport(report);
  EXPECT_THAT(text, HasSubstr("  run 4  "));
  EXPECT_THAT(text, Not(HasSubstr("no baseline:")));
  EXPECT_THAT(text, HasSubstr("no regression (tolerance 5%)\n"));
}

TEST(RegressReportJson, HoldsTheSameComparison) {
  RegressOptions options;
  options.references[RegressMetric::kThroughput] = 1e12;
  RegressReport report =
      CompareRegress({ScoredRun(9, 100)}, {ScoredRun(4, 100)}, options);
  nlohmann::json json = nlohmann::json::parse(RegressReportJson(report));
  EXPECT_EQ(json["run_ids"], nlohmann::json::array({9}));
  EXPECT_EQ(json["baseline"]["kind"], "series");
  EXPECT_EQ(json["baseline"]["run_ids"], nlohmann::json::array({4}));
  EXPECT_EQ(json["regressed"], true);
  ASSERT_EQ(json["metrics"].size(), 4u);
  EXPECT_EQ(json["metrics"][0]["metric"], "throughput");
  EXPECT_EQ(json["metrics"][0]["from"], "reference");
  EXPECT_EQ(json["metrics"][0]["verdict"], "regressed");
  EXPECT_EQ(json["metrics"][1]["from"], "runs");
  EXPECT_EQ(json["metrics"][1]["verdict"], "ok");
  EXPECT_EQ(json["metrics"][1]["change_pct"], 0.0);
  EXPECT_EQ(json["metrics"][1]["band"]["learned"], false);
  EXPECT_EQ(json["metrics"][1]["band"]["history_runs"],
            nlohmann::json::array({4}));
  // No epoch reached the target: no time to target, no baseline for it.
  EXPECT_EQ(json["metrics"][3]["metric"], "time_to_target");
  EXPECT_EQ(json["metrics"][3]["value"], nullptr);
  EXPECT_EQ(json["metrics"][3]["verdict"], "no_baseline");
}

TEST(RegressJUnitXml, HasOneFailurePerRegressionAndIsWellFormed) {
  RegressOptions options;
  options.references[RegressMetric::kThroughput] = 1e12;
  v1::Run current = ScoredRun(9, 100, 1e9, 0.6, /*reached=*/false);
  current.mutable_spec()->set_name("a<b> & \"c\"");
  RegressReport report = CompareRegress(
      {current}, {ScoredRun(4, 100, 1e9, 0.8, /*reached=*/true)}, options);
  const std::string xml = RegressJUnitXml("nightly & <co>", {report});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_EQ(Count(xml, "<testcase "), 4u) << xml;
  EXPECT_EQ(Count(xml, "<failure "), 2u) << xml;
  EXPECT_THAT(xml, HasSubstr("failures=\"2\""));
  EXPECT_THAT(xml, HasSubstr("name=\"throughput\">\n      <failure "
                             "message=\"throughput dropped 100.0%"));
  EXPECT_THAT(xml, HasSubstr("name=\"quality\">\n      <failure "));
  EXPECT_THAT(xml, HasSubstr("name=\"valid_flops\">\n    </testcase>"));
  EXPECT_THAT(xml, HasSubstr("classname=\"hpcai500.regress.a&lt;b&gt; &amp; "
                             "&quot;c&quot;\""));
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"hpcai500 regress nightly "
                             "&amp; &lt;co&gt;\""));
}

TEST(RegressJUnitXml, PassingRunHasNoFailureAndNoBaselineIsSkipped) {
  RegressReport passing =
      CompareRegress({ScoredRun(9, 100)}, {ScoredRun(4, 100)}, {});
  std::string xml = RegressJUnitXml("s", {passing});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_EQ(Count(xml, "<failure"), 0u) << xml;
  EXPECT_THAT(xml, HasSubstr("failures=\"0\""));

  RegressReport first = CompareRegress({ScoredRun(9, 100)}, {}, {});
  xml = RegressJUnitXml("s", {first});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_EQ(Count(xml, "<failure"), 0u) << xml;
  EXPECT_EQ(Count(xml, "<skipped "), 4u) << xml;
}

TEST(RegressJUnitXml, AFailedRunIsOneError) {
  RegressReport report;
  report.name = "fmnist-nightly";
  report.run_ids = {9};
  report.error = "run 9 failed: worker rank 0 exited with code 3";
  std::string xml = RegressJUnitXml("s", {report});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_EQ(Count(xml, "<testcase "), 1u);
  EXPECT_THAT(xml, HasSubstr("<error message=\"run 9 failed: worker rank 0 "
                             "exited with code 3\"/>"));
  EXPECT_EQ(Count(xml, "<failure"), 0u);
  // A stderr line break stays in the attribute; a control byte does not.
  report.error = "rank 0:\nboom\x01";
  xml = RegressJUnitXml("s", {report});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_THAT(xml, HasSubstr("message=\"rank 0:&#10;boom?\""));
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

TEST(RegressJUnitXml, SuiteHasOneTestsuitePerSpecAndNamesTheRegressedCase) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput};
  RegressReport fine =
      CompareRegress({ScoredRun(9, 100)}, {ScoredRun(1, 100)}, options);
  v1::Run slow = ScoredRun(10, 40);
  slow.mutable_spec()->set_name("ewa-smoke");
  RegressReport slowed = CompareRegress({slow}, {ScoredRun(2, 100)}, options);
  const std::string xml = RegressJUnitXml("nightly", {fine, slowed});
  EXPECT_EQ(WellFormedProblem(xml), "") << xml;
  EXPECT_EQ(Count(xml, "<testsuite "), 2u) << xml;
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"hpcai500 regress nightly\" "
                             "tests=\"2\" failures=\"1\" errors=\"0\">"));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"hpcai500.regress."
                             "ewa-smoke\" name=\"throughput\">\n      "
                             "<failure message=\"throughput dropped 60.0%"));
  // The failure's text names the runs on both sides and the band.
  EXPECT_THAT(xml, HasSubstr("this run 40.0 samples/s (run 10)"));
  EXPECT_THAT(xml, HasSubstr("fixed (--tolerance): 1 good run"));
}

TEST(RegressMarkdown, TabulatesEveryVerdictAndEscapesCells) {
  RegressOptions options;
  options.metrics = {RegressMetric::kThroughput, RegressMetric::kQuality};
  v1::Run current = ScoredRun(9, 50);
  current.mutable_spec()->set_name("a|b <c>");
  RegressReport report =
      CompareRegress({current}, {ScoredRun(1, 100)}, options);
  RegressReport failed;
  failed.name = "ewa";
  failed.run_ids = {10};
  failed.error = "run 10 failed: rank 0 exited with code 3";
  const std::string md = RegressMarkdown("nightly", {report, failed});
  EXPECT_THAT(md, HasSubstr("## hpcai500 regress: nightly \u2014 REGRESSED (1 "
                            "of 2 verdicts), 1 spec failed\n"));
  EXPECT_THAT(md, HasSubstr("| spec | metric | value | baseline | band | "
                            "verdict |\n|---|"));
  EXPECT_THAT(md, HasSubstr("| a\\|b &lt;c&gt; | throughput | 50.0 samples/s "
                            "| 100.0 samples/s (run 1) | \u00b15.0% fixed, 1 "
                            "run | **REGRESSED** -50.0% |\n"));
  EXPECT_THAT(md, HasSubstr("| a\\|b &lt;c&gt; | quality | 0.8000 |"));
  EXPECT_THAT(md, HasSubstr("| ewa | run | - | - | - | **FAILED** |"));
  EXPECT_THAT(md, HasSubstr("- **a\\|b &lt;c&gt; throughput**: dropped 50.0%"));
  // Every table row has the header's seven separators.
  for (absl::string_view line : absl::StrSplit(md, '\n')) {
    if (!absl::StartsWith(line, "|")) continue;
    EXPECT_EQ(Count(absl::StrReplaceAll(line, {{"\\|", ""}}), "|"), 7u) << line;
  }
  EXPECT_THAT(RegressMarkdown("nightly", {}), HasSubstr("no regression"));
}

TEST(ParseRegressBaselineFile, ReadsBackWhatTheSuiteJsonWrote) {
  RegressOptions options;
  RegressReport report = CompareRegress({RunWithEpochs(9, 10, 2)}, {}, options);
  auto values = ParseRegressBaselineFile(RegressSuiteJson("s", {report}));
  ASSERT_TRUE(values.ok()) << values.status();
  const auto& spec = values->at("fmnist-nightly");
  EXPECT_EQ(spec.at(RegressMetric::kThroughput), 100);
  EXPECT_EQ(spec.at(RegressMetric::kTimeToTarget), 20);
  EXPECT_EQ(spec.at(RegressMetric::kQuality), 0.8);
  // One report (regress --json) works too; a null value is skipped.
  values = ParseRegressBaselineFile(
      R"({"name": "x", "metrics": [{"metric": "quality", "value": 0.5},
          {"metric": "time_to_target", "value": null}]})");
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("x").size(), 1u);
}

TEST(ParseRegressBaselineFile, BadFilesAreNamed) {
  EXPECT_THAT(ParseRegressBaselineFile("[1]").status().message(),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseRegressBaselineFile("{").status().message(),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseRegressBaselineFile(R"({"specs": 3})").status().message(),
              HasSubstr("\"specs\" is not an array"));
  EXPECT_THAT(ParseRegressBaselineFile(R"({"specs": [{"name": "a"}]})")
                  .status()
                  .message(),
              HasSubstr("spec 1: needs a string \"name\""));
  EXPECT_THAT(
      ParseRegressBaselineFile(
          R"({"name": "a", "metrics": [{"metric": "speed", "value": 1}]})")
          .status()
          .message(),
      HasSubstr("unknown metric 'speed'"));
  EXPECT_THAT(
      ParseRegressBaselineFile(
          R"({"name": "a", "metrics": [{"metric": "quality", "value": "x"}]})")
          .status()
          .message(),
      HasSubstr("quality's value is not a finite number"));
}

TEST(ParseRegressBaseline, TellsLastGoodARunAndAFileApart) {
  RegressOptions options;
  ASSERT_TRUE(ParseRegressBaseline("last-good", options).ok());
  EXPECT_EQ(options.baseline, RegressBaselineKind::kLastGood);
  ASSERT_TRUE(ParseRegressBaseline("42", options).ok());
  EXPECT_EQ(options.baseline, RegressBaselineKind::kRun);
  EXPECT_EQ(options.baseline_run, 42);
  ASSERT_TRUE(ParseRegressBaseline("nightly.json", options).ok());
  EXPECT_EQ(options.baseline, RegressBaselineKind::kFile);
  EXPECT_EQ(options.baseline_file, "nightly.json");
  EXPECT_THAT(ParseRegressBaseline("0", options).message(),
              HasSubstr("--baseline: expected a run id"));
  EXPECT_THAT(ParseRegressMinHistory("1").status().message(),
              HasSubstr("--min-history must be an integer of at least 2"));
}

TEST(WellFormedProblem, CatchesWhatItChecks) {
  EXPECT_NE(WellFormedProblem("<a><b></a></b>"), "");
  EXPECT_NE(WellFormedProblem("<a>x & y</a>"), "");
  EXPECT_NE(WellFormedProblem("<a x=\"<\"/>"), "");
  EXPECT_NE(WellFormedProblem("<a>"), "");
  EXPECT_EQ(WellFormedProblem("<a x=\"1\"><b/>t &amp; u</a>\n"), "");
}

TEST(RegressFlags, BadValuesAreNamed) {
  EXPECT_THAT(ParseRegressWindow("0").status().message(),
              HasSubstr("--window must be an integer of at least 1, got '0'"));
  EXPECT_FALSE(ParseRegressWindow("two").ok());
  EXPECT_EQ(*ParseRegressWindow("3"), 3);
  EXPECT_THAT(ParseRegressPercent("--tolerance", "-1").status().message(),
              HasSubstr("--tolerance must be a percentage of at least 0"));
  EXPECT_FALSE(ParseRegressPercent("--tolerance", "nan").ok());
  EXPECT_FALSE(ParseRegressPercent("--tolerance", "inf").ok());
  EXPECT_FALSE(ParseRegressPercent("--tolerance", "5%").ok());
  EXPECT_EQ(*ParseRegressPercent("--tolerance", "2.5"), 2.5);
  EXPECT_THAT(ParseRegressMetric("speed").status().message(),
              HasSubstr("unknown metric 'speed' (known: throughput, flops, "
                        "valid_flops, quality, time_to_target)"));

  RegressOptions options;
  EXPECT_THAT(AddRegressReference("throughput", options).message(),
              HasSubstr("--reference needs METRIC=VALUE, got 'throughput'"));
  EXPECT_THAT(AddRegressReference("speed=3", options).message(),
              HasSubstr("unknown metric 'speed'"));
  EXPECT_THAT(AddRegressReference("quality=high", options).message(),
              HasSubstr("--reference quality needs a number"));
  EXPECT_FALSE(AddRegressReference("quality=nan", options).ok());
  ASSERT_TRUE(AddRegressReference("throughput=1e12", options).ok());
  EXPECT_EQ(options.references.at(RegressMetric::kThroughput), 1e12);
  EXPECT_THAT(AddRegressReference("throughput=5", options).message(),
              HasSubstr("--reference throughput given twice"));
}

}  // namespace
}  // namespace hpcai500
