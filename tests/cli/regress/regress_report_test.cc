#include "cli/regress/regress_report.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/regress/test_runs.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::ScoredRun;
using ::testing::HasSubstr;
using ::testing::Not;

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

TEST(WellFormedProblem, CatchesWhatItChecks) {
  EXPECT_NE(WellFormedProblem("<a><b></a></b>"), "");
  EXPECT_NE(WellFormedProblem("<a>x & y</a>"), "");
  EXPECT_NE(WellFormedProblem("<a x=\"<\"/>"), "");
  EXPECT_NE(WellFormedProblem("<a>"), "");
  EXPECT_EQ(WellFormedProblem("<a x=\"1\"><b/>t &amp; u</a>\n"), "");
}

}  // namespace
}  // namespace hpcai500
