#include "common/registry.h"

#include <gtest/gtest.h>

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

TEST(Registry, RefusesBadNumbers) {
  std::string error;
  EXPECT_FALSE(
      Registry::Parse("[workload w]\n[config w/c]\ntarget = high\n", &error)
          .has_value());
  EXPECT_NE(error.find("target is not a number"), std::string::npos) << error;
}

}  // namespace
}  // namespace hpcai500
