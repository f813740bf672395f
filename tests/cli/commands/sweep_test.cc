#include "cli/commands/sweep.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methodology/spec.h"
#include "methodology/suite.h"
#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// examples/fmnist-smoke.yaml: fashion_mnist_smoke on 1 node x 2 ranks of
// CPU, 64 per rank (a global batch of 128), fp32, level system.
std::string Example() {
  return ::hpcai500::testing::SourceFileText("examples/fmnist-smoke.yaml");
}

v1::RunSpec Base(const std::string& yaml = Example()) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, Registry::Builtin());
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

SweepOptions Axes(absl::string_view nodes, absl::string_view ranks = "",
                  absl::string_view precisions = "",
                  absl::string_view compressions = "",
                  absl::string_view scaling = "") {
  SweepOptions options;
  absl::Status parsed =
      ParseSweepAxes(nodes, ranks, precisions, compressions, scaling, options);
  EXPECT_TRUE(parsed.ok()) << parsed;
  return options;
}

std::vector<std::string> Names(const std::vector<v1::RunSpec>& points) {
  std::vector<std::string> names;
  for (const v1::RunSpec& point : points) names.push_back(point.name());
  return names;
}

std::string AxisError(absl::string_view nodes, absl::string_view ranks,
                      absl::string_view precisions,
                      absl::string_view compressions,
                      absl::string_view scaling) {
  SweepOptions options;
  absl::Status status =
      ParseSweepAxes(nodes, ranks, precisions, compressions, scaling, options);
  return status.ok() ? "accepted" : std::string(status.message());
}

TEST(Sweep, ExpandsTheProductPrecisionFirstAndNodesFewestFirst) {
  absl::StatusOr<std::vector<v1::RunSpec>> points =
      ExpandSweep(Base(), Axes("1,2", "", "fp32,bf16", "none,powersgd"),
                  "fmnist-smoke-s1", Registry::Builtin());
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_THAT(
      Names(*points),
      ElementsAre("fmnist-smoke-1n2r-fp32-none", "fmnist-smoke-2n2r-fp32-none",
                  "fmnist-smoke-1n2r-fp32-powersgd",
                  "fmnist-smoke-2n2r-fp32-powersgd",
                  "fmnist-smoke-1n2r-bf16-none", "fmnist-smoke-2n2r-bf16-none",
                  "fmnist-smoke-1n2r-bf16-powersgd",
                  "fmnist-smoke-2n2r-bf16-powersgd"));
  for (const v1::RunSpec& point : *points) {
    EXPECT_EQ(point.sweep(), "fmnist-smoke-s1");
    EXPECT_EQ(point.scaling(), "weak");
    EXPECT_EQ(point.ranks_per_node(), 2);  // the spec's own
    EXPECT_EQ(point.system(), "local-cpu");
  }
  EXPECT_EQ((*points)[7].precision(), "bf16");
  EXPECT_EQ((*points)[7].compression(), "powersgd");
  EXPECT_EQ((*points)[7].nodes(), 2);
}

TEST(Sweep, WeakScalingKeepsTheBatchPerRank) {
  absl::StatusOr<std::vector<v1::RunSpec>> points =
      ExpandSweep(Base(), Axes("1,2,4", "1,2"), "s", Registry::Builtin());
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), 6u);
  for (const v1::RunSpec& point : *points) EXPECT_EQ(point.batch_size(), 64);
}

TEST(Sweep, StrongScalingDividesTheSpecsGlobalBatchOverTheRanks) {
  // The spec's global batch: 64 x 1 node x 2 ranks = 128.
  absl::StatusOr<std::vector<v1::RunSpec>> points = ExpandSweep(
      Base(), Axes("1,2,4,8", "1", "", "", "strong"), "s", Registry::Builtin());
  ASSERT_TRUE(points.ok()) << points.status();
  std::vector<int> batches;
  for (const v1::RunSpec& point : *points) {
    batches.push_back(point.batch_size());
    EXPECT_EQ(point.batch_size() * point.nodes(), 128);
    EXPECT_EQ(point.scaling(), "strong");
  }
  EXPECT_THAT(batches, ElementsAre(128, 64, 32, 16));
}

TEST(Sweep, StrongScalingRefusesAGlobalBatchThatDoesNotDivide) {
  absl::StatusOr<std::vector<v1::RunSpec>> points = ExpandSweep(
      Base(), Axes("1,3", "", "", "", "strong"), "s", Registry::Builtin());
  ASSERT_FALSE(points.ok());
  EXPECT_EQ(points.status().message(),
            "--scaling strong: the global batch of 128 (batch_size 64 x 1 "
            "nodes x 2 ranks per node) does not divide over 6 ranks (3 nodes "
            "x 2)");
}

TEST(Sweep, LevelHardwareTakesEachPrecisionsReferenceBatch) {
  std::string yaml = Example();
  yaml.replace(yaml.find("level: system"), 13, "level: hardware");
  const ConfigInfo& config = *Registry::Builtin().FindConfig(
      "image_classification", "fashion_mnist_smoke");
  yaml.replace(yaml.find("batch_size: 64"), 14,
               "batch_size: " + std::to_string(ReferenceBatchSize(
                                    config, Precision::kFp32)));
  absl::StatusOr<std::vector<v1::RunSpec>> points = ExpandSweep(
      Base(yaml), Axes("1", "", "fp32,bf16"), "s", Registry::Builtin());
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ((*points)[0].batch_size(),
            ReferenceBatchSize(config, Precision::kFp32));
  EXPECT_EQ((*points)[1].batch_size(),
            ReferenceBatchSize(config, Precision::kBf16));
  // Strong scaling changes the batch per rank, which the level forbids.
  points = ExpandSweep(Base(yaml), Axes("1,2", "1", "", "", "strong"), "s",
                       Registry::Builtin());
  ASSERT_FALSE(points.ok());
  EXPECT_THAT(points.status().message(),
              HasSubstr("sweep point fmnist-smoke-1n1r-fp32-none: field "
                        "'batch_size': level hardware keeps the reference "
                        "batch"));
}

TEST(Sweep, APointTheSpecRulesRefuseIsNamed) {
  // bf16 compression needs CUDA; the spec runs on CPU.
  absl::StatusOr<std::vector<v1::RunSpec>> points = ExpandSweep(
      Base(), Axes("1", "", "", "none,bf16"), "s", Registry::Builtin());
  ASSERT_FALSE(points.ok());
  EXPECT_THAT(points.status().message(),
              HasSubstr("sweep point fmnist-smoke-1n2r-fp32-bf16: field "
                        "'compression': bf16 needs device cuda"));
}

TEST(Sweep, RefusesMoreRunsThanASuiteHolds) {
  absl::StatusOr<std::vector<v1::RunSpec>> points =
      ExpandSweep(Base(), Axes("1,2,3,4,5,6", "1,2,3,4,5,6", "fp32,bf16,fp16"),
                  "s", Registry::Builtin());
  ASSERT_FALSE(points.ok());
  EXPECT_EQ(points.status().message(),
            "a sweep of 108 runs; a suite holds at most 100");
}

TEST(Sweep, BadAxisValuesAreClearErrors) {
  EXPECT_EQ(AxisError("0,2", "", "", "", ""),
            "--nodes: '0' is not a count between 1 and 4096");
  EXPECT_EQ(AxisError("1,two", "", "", "", ""),
            "--nodes: 'two' is not a count between 1 and 4096");
  EXPECT_EQ(AxisError("1,,2", "", "", "", ""),
            "--nodes: an empty value in '1,,2' (a list like 1,2,4)");
  EXPECT_EQ(AxisError("2,2", "", "", "", ""), "--nodes: '2' given twice");
  EXPECT_EQ(AxisError("", "65", "", "", ""),
            "--ranks-per-node: '65' is not a count between 1 and 64");
  EXPECT_EQ(AxisError("", "", "fp32,fp8", "", ""),
            "--precision: must be one of fp32, bf16, fp16; got 'fp8'");
  EXPECT_EQ(AxisError("", "", "", "topk", ""),
            "--compression: must be one of none, fp16, bf16, powersgd; got "
            "'topk'");
  EXPECT_EQ(AxisError("", "", "", "", "linear"),
            "--scaling: must be one of strong, weak; got 'linear'");
}

TEST(Sweep, SuiteTextIsOneSuiteOfEveryPointThatParsesBack) {
  absl::StatusOr<std::vector<v1::RunSpec>> points =
      ExpandSweep(Base(), Axes("1,2", "", "", "", "strong"), "fmnist-smoke-s1",
                  Registry::Builtin());
  ASSERT_TRUE(points.ok()) << points.status();
  absl::StatusOr<Suite> suite =
      ParseSuite(SweepSuiteYaml("fmnist-smoke-s1", *points));
  ASSERT_TRUE(suite.ok()) << suite.status();
  EXPECT_EQ(suite->name, "fmnist-smoke-s1");
  ASSERT_EQ(suite->specs.size(), 2u);
  absl::StatusOr<v1::RunSpec> second =
      ParseRunSpec(suite->specs[1], Registry::Builtin());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->name(), "fmnist-smoke-2n2r-fp32-none");
  EXPECT_EQ(second->sweep(), "fmnist-smoke-s1");
  EXPECT_EQ(second->scaling(), "strong");
  EXPECT_EQ(second->batch_size(), 32);
}

TEST(Sweep, NewIdsNameTheSpecAndTheTimeAndDiffer) {
  const absl::Time now = absl::FromUnixSeconds(1764907200);  // 2025-12-05
  const std::string id = NewSweepId("fmnist", now);
  EXPECT_TRUE(absl::StartsWith(id, "fmnist-20251205-040000-")) << id;
  EXPECT_NE(id, NewSweepId("fmnist", now));
}

}  // namespace
}  // namespace hpcai500
