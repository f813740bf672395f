#include "cli/regress/regress_flags.h"

#include <string>
#include <vector>

#include "cli/regress/regress_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/regress/test_runs.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::RunWithEpochs;
using ::testing::HasSubstr;

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
