#include "methodology/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace hpcai500 {
namespace {

TEST(Registry, BuiltinHasBothWorkloadsAndTheReferenceTargets) {
  const Registry& reg = Registry::Builtin();
  ASSERT_NE(reg.FindWorkload("image_classification"), nullptr);
  ASSERT_NE(reg.FindWorkload("extreme_weather"), nullptr);
  const ConfigInfo* imagenet =
      reg.FindConfig("image_classification", "imagenet");
  ASSERT_NE(imagenet, nullptr);
  EXPECT_DOUBLE_EQ(imagenet->target, 0.763);
  EXPECT_EQ(imagenet->epochs, 90);
  const ConfigInfo* ewa = reg.FindConfig("extreme_weather", "ewa");
  ASSERT_NE(ewa, nullptr);
  EXPECT_DOUBLE_EQ(ewa->target, 0.35);
  EXPECT_EQ(ewa->epochs, 50);
  EXPECT_DOUBLE_EQ(reg.FindWorkload("image_classification")->exponent, 5);
  EXPECT_NE(reg.FindConfig("image_classification", "fashion_mnist_smoke"),
            nullptr);
}

TEST(Registry, RefusesUnknownKeysNamingTheLine) {
  std::string error;
  auto reg = Registry::Parse(
      "[workload w]\nmetric = top1\n\n[config w/c]\ncolour = blue\n", &error);
  EXPECT_FALSE(reg.has_value());
  EXPECT_NE(error.find("line 5"), std::string::npos) << error;
  EXPECT_NE(error.find("colour"), std::string::npos) << error;
}

TEST(Registry, RefusesConfigOfUndeclaredWorkload) {
  std::string error;
  EXPECT_FALSE(Registry::Parse("[config nope/c]\n", &error).has_value());
  EXPECT_NE(error.find("undeclared workload"), std::string::npos) << error;
}

TEST(Registry, ReadsAConfigsFastPathsAndRefusesUnknownOnes) {
  std::string error;
  std::optional<Registry> registry = Registry::Parse(
      "[workload w]\nexponent = 5\n[config w/c]\nepochs = 1\n"
      "batch_size = 1\ntarget = 0.5\nfast_paths = fused_bn, cuda_graph\n",
      &error);
  ASSERT_TRUE(registry.has_value()) << error;
  EXPECT_EQ(registry->FindConfig("w", "c")->fast_paths,
            std::vector<std::string>({"fused_bn", "cuda_graph"}));
  EXPECT_FALSE(Registry::Parse("[workload w]\n[config w/c]\n"
                               "fast_paths = fused_bn, warp_drive\n",
                               &error)
                   .has_value());
  EXPECT_NE(error.find("fast_paths: 'warp_drive' is no fast path"),
            std::string::npos)
      << error;
  EXPECT_TRUE(Registry::Builtin()
                  .FindConfig("image_classification", "fashion_mnist_smoke")
                  ->fast_paths.size() == 1);
}

TEST(Registry, RefusesBadNumbers) {
  std::string error;
  EXPECT_FALSE(
      Registry::Parse("[workload w]\n[config w/c]\ntarget = high\n", &error)
          .has_value());
  EXPECT_NE(error.find("target is not a number"), std::string::npos) << error;
}

// Found by tests/fuzz/registry_fuzzer: "target = nan" passed the rule that
// targets are positive (corpus/registry/target-nan.ini).
TEST(Registry, RefusesNanAndInfinity) {
  for (const std::string number : {"nan", "-nan", "inf", "infinity", "1e999"}) {
    std::string error;
    EXPECT_FALSE(Registry::Parse("[workload w]\nexponent = 5\n[config w/c]\n"
                                 "epochs = 1\nbatch_size = 1\ntarget = " +
                                     number + "\n",
                                 &error)
                     .has_value())
        << number;
    EXPECT_NE(error.find("target is not a number"), std::string::npos) << error;
  }
}

constexpr char kEwaConfig[] =
    "[workload w]\n[config w/c]\ntarget = 0.3\nepochs = 2\n"
    "batch_size = 2\ndataset = extreme_weather\n";

TEST(Registry, ReadsYearListsAndTheGeneratedGrid) {
  std::string error;
  auto reg = Registry::Parse(std::string(kEwaConfig) +
                                 "train_years = 1979, 1980 1981\n"
                                 "eval_years = 1984\ngenerate_samples = 32\n"
                                 "generate_grid = 96x144\n",
                             &error);
  ASSERT_TRUE(reg.has_value()) << error;
  const ConfigInfo* c = reg->FindConfig("w", "c");
  EXPECT_EQ(c->train_years, (std::vector<int>{1979, 1980, 1981}));
  EXPECT_EQ(c->eval_years, (std::vector<int>{1984}));
  EXPECT_EQ(c->generate_samples, 32);
  EXPECT_EQ(c->generate_height, 96);
  EXPECT_EQ(c->generate_width, 144);
}

TEST(Registry, RefusesExtremeWeatherConfigsWithoutYearsOrWithBadGrids) {
  std::string error;
  EXPECT_FALSE(
      Registry::Parse(std::string(kEwaConfig) + "eval_years = 1984\n", &error)
          .has_value());
  EXPECT_NE(error.find("needs train_years and eval_years"), std::string::npos)
      << error;
  EXPECT_FALSE(
      Registry::Parse(std::string(kEwaConfig) + "train_years = 79\n", &error)
          .has_value());
  EXPECT_NE(error.find("train_years is not a list of years"), std::string::npos)
      << error;
  EXPECT_FALSE(Registry::Parse(std::string(kEwaConfig) +
                                   "train_years = 1979\neval_years = 1984\n"
                                   "generate_grid = 96 by 144\n",
                               &error)
                   .has_value());
  EXPECT_NE(error.find("generate_grid is not HEIGHTxWIDTH"), std::string::npos)
      << error;
}

TEST(Registry, BuiltinNoopTrainsNothingAndHasNoTarget) {
  const WorkloadInfo* workload =
      Registry::Builtin().FindWorkload(kNoopWorkload);
  ASSERT_NE(workload, nullptr);
  EXPECT_EQ(workload->metric, "none");
  const ConfigInfo* noop =
      Registry::Builtin().FindConfig(kNoopWorkload, "noop");
  ASSERT_NE(noop, nullptr);
  EXPECT_EQ(noop->target, 0);
  EXPECT_EQ(noop->epochs, 1);
  EXPECT_FALSE(noop->real_data) << "a noop run must never rank";
  EXPECT_TRUE(noop->implemented);
  EXPECT_EQ(noop->model, "none");
  EXPECT_EQ(noop->dataset, "none");
}

TEST(Registry, OnlyNoopConfigsHaveTargetZero) {
  std::string error;
  EXPECT_TRUE(Registry::Parse("[workload noop]\n[config noop/n]\ntarget = 0\n"
                              "epochs = 1\nbatch_size = 1\n",
                              &error)
                  .has_value())
      << error;
  EXPECT_FALSE(Registry::Parse("[workload noop]\n[config noop/n]\n"
                               "target = 0.5\nepochs = 1\nbatch_size = 1\n",
                               &error)
                   .has_value());
  EXPECT_NE(error.find("target must be 0 (a noop trains nothing)"),
            std::string::npos)
      << error;
  EXPECT_FALSE(Registry::Parse("[workload w]\n[config w/c]\ntarget = 0\n"
                               "epochs = 1\nbatch_size = 1\n",
                               &error)
                   .has_value());
  EXPECT_NE(error.find("config w/c: target must be positive"),
            std::string::npos)
      << error;
}

TEST(Registry, BuiltinExtremeWeatherConfigsAreImplementedWithYears) {
  for (const ConfigInfo& c : Registry::Builtin().configs()) {
    if (c.workload != "extreme_weather") continue;
    EXPECT_TRUE(c.implemented) << c.name;
    EXPECT_FALSE(c.train_years.empty()) << c.name;
    EXPECT_FALSE(c.eval_years.empty()) << c.name;
  }
  const ConfigInfo* smoke =
      Registry::Builtin().FindConfig("extreme_weather", "ewa_smoke");
  ASSERT_NE(smoke, nullptr);
  EXPECT_GT(smoke->generate_samples, 0);
}

constexpr char kConfigText[] =
    "[workload w]\nmetric = top1\n[config w/c]\nepochs = 4\n"
    "batch_size = 8\ntarget = 0.5\n";

TEST(Registry, ReadsReferenceConvergencePointsByBatch) {
  std::string error;
  auto reg = Registry::Parse(
      std::string(kConfigText) +
          "[rcp w/c]\nglobal_batch = 128\nepochs_to_target = 3, 4, 3.5\n"
          "made_by = bench/make_rcp.sh c 128\n"
          "[rcp w/c]\nglobal_batch = 64\nepochs_to_target = 2 2 3 2\n"
          "made_by = by hand\n",
      &error);
  ASSERT_TRUE(reg.has_value()) << error;
  const std::vector<ReferenceConvergence> refs = reg->References("w", "c");
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].global_batch, 64);  // smallest batch first
  EXPECT_EQ(refs[0].epochs, (std::vector<double>{2, 2, 3, 2}));
  EXPECT_EQ(refs[1].epochs, (std::vector<double>{3, 4, 3.5}));
  EXPECT_EQ(refs[1].made_by, "bench/make_rcp.sh c 128");
  EXPECT_TRUE(reg->References("w", "other").empty());
}

TEST(Registry, RefusesReferencePointsItCannotUse) {
  const std::pair<std::string, std::string> cases[] = {
      {"[rcp w/nope]\n", "declared above"},
      {"[rcp w/c]\nglobal_batch = 8\nepochs_to_target = 3, 4\n"
       "made_by = x\n",
       "at least 3"},
      {"[rcp w/c]\nglobal_batch = 8\nepochs_to_target = 3, -4, 5\n",
       "positive numbers"},
      {"[rcp w/c]\nglobal_batch = 0\n", "positive integer"},
      {"[rcp w/c]\nglobal_batch = 8\nepochs_to_target = 3 4 5\n", "made_by"},
      {"[rcp w/c]\nglobal_batch = 8\nepochs_to_target = 3 4 5\nmade_by = "
       "x\n[rcp w/c]\nglobal_batch = 8\nepochs_to_target = 3 4 5\nmade_by "
       "= x\n",
       "two points for global_batch 8"},
      {"[rcp w/c]\ncolour = blue\n", "unknown rcp key 'colour'"},
  };
  for (const auto& [text, why] : cases) {
    std::string error;
    EXPECT_FALSE(
        Registry::Parse(std::string(kConfigText) + text, &error).has_value())
        << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
  }
}

TEST(Registry, BuiltinReferencePointsSayHowTheyWereMade) {
  const Registry& reg = Registry::Builtin();
  const std::vector<ReferenceConvergence> refs =
      reg.References("image_classification", "fashion_mnist_smoke");
  ASSERT_FALSE(refs.empty());
  for (const ReferenceConvergence& r : refs) {
    EXPECT_NE(r.made_by.find("bench/make_rcp.sh"), std::string::npos)
        << r.made_by;
  }
}

ConfigInfo Config(const std::string& dataset, int batch_size) {
  ConfigInfo config;
  config.dataset = dataset;
  config.batch_size = batch_size;
  return config;
}

TEST(ReferenceBatch, MixedPrecisionDoublesTheReferenceBatch) {
  const ConfigInfo fmnist = Config("fashion_mnist", 64);
  EXPECT_EQ(ReferenceBatchSize(fmnist, Precision::kFp32), 64);
  EXPECT_EQ(ReferenceBatchSize(fmnist, Precision::kBf16), 128);
  EXPECT_EQ(ReferenceBatchSize(fmnist, Precision::kFp16), 128);
  EXPECT_FALSE(IsMixedPrecision(Precision::kFp32));
  EXPECT_TRUE(IsMixedPrecision(Precision::kFp16));
}

TEST(ReferenceBatch, DefaultBatchDoublesOnlyForImagenet) {
  EXPECT_EQ(DefaultBatchSize(Config("imagenet", 128), Precision::kBf16), 256);
  EXPECT_EQ(DefaultBatchSize(Config("imagenet", 128), Precision::kFp32), 128);
  EXPECT_EQ(DefaultBatchSize(Config("cifar10", 128), Precision::kBf16), 128);
}

}  // namespace
}  // namespace hpcai500
