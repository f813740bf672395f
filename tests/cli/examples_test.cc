// The example specs that the README and `hpcai500 submit` use must pass the
// coordinator's own validation.
#include <string>

#include "gtest/gtest.h"
#include "methodology/registry.h"
#include "methodology/spec.h"
#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

std::string ReadExample(const std::string& name) {
  return ::hpcai500::testing::SourceFileText("examples/" + name);
}

TEST(Examples, SmokeSpecIsValidWithTheSmokeConfig) {
  std::string yaml = ReadExample("fmnist-smoke.yaml");
  ASSERT_FALSE(yaml.empty());
  auto spec = ParseRunSpec(yaml, Registry::Builtin());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "fmnist-smoke");
  EXPECT_EQ(spec->config(), "fashion_mnist_smoke");
  EXPECT_EQ(spec->ranks_per_node(), 2);
  EXPECT_EQ(spec->device(), "cpu");
  EXPECT_EQ(spec->system(), "local-cpu");
}

TEST(Examples, FullSpecIsValidWithTheFullConfig) {
  std::string yaml = ReadExample("fmnist.yaml");
  ASSERT_FALSE(yaml.empty());
  auto spec = ParseRunSpec(yaml, Registry::Builtin());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "fmnist");
  EXPECT_EQ(spec->config(), "fashion_mnist");
  EXPECT_EQ(spec->batch_size(), 64);
}

TEST(Examples, NoopSpecIsValidAndUnranked) {
  std::string yaml = ReadExample("noop.yaml");
  ASSERT_FALSE(yaml.empty());
  auto spec = ParseRunSpec(yaml, Registry::Builtin());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->workload(), kNoopWorkload);
  EXPECT_EQ(spec->nodes(), 2);
  EXPECT_FALSE(spec->ranked());
}

TEST(Examples, EarlyAbortSpecAsksForIt) {
  std::string yaml = ReadExample("fmnist-curve-abort.yaml");
  ASSERT_FALSE(yaml.empty());
  auto spec = ParseRunSpec(yaml, Registry::Builtin());
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->abort_if_hopeless(), 0.05);
  EXPECT_EQ(spec->min_epochs(), 3);
}

}  // namespace
}  // namespace hpcai500
