#include "cli/args/parse_cli_args.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

TEST(ParseCliArgs, CheckTakesATimeoutAsSecondsOrADuration) {
  auto parsed =
      ParseCliArgs({"check", "node-a", "--timeout", "90s", "--json"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->check.timeout, absl::Seconds(90));
  EXPECT_TRUE(parsed->json);
  parsed = ParseCliArgs({"check", "node-a", "--timeout=5"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->check.timeout, absl::Seconds(5));
  parsed = ParseCliArgs({"check", "node-a"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->check.timeout, absl::Minutes(2));
  for (const char* bad : {"0", "-3", "soon"}) {
    parsed = ParseCliArgs({"check", "node-a", "--timeout", bad}, {});
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--timeout")) << bad;
  }
  EXPECT_FALSE(ParseCliArgs({"check"}, {}).ok()) << "NODE is required";
}

TEST(ParseCliArgs, PreflightTakesAnyNumberOfNodesOrAQueue) {
  auto parsed = ParseCliArgs({"preflight", "a", "b", "c", "--json"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->positional, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(parsed->json);
  parsed = ParseCliArgs({"preflight", "--queue", "gpu"}, {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->positional.empty());
  EXPECT_EQ(parsed->queue, "gpu");
  // Other commands still refuse an extra word.
  EXPECT_FALSE(ParseCliArgs({"drain", "a", "b", "--reason", "x"}, {}).ok());
}

TEST(ParseCliArgs, RegressFlagsRepeatAndFillTheOptions) {
  auto parsed = ParseCliArgs(
      {"regress", "s.yaml", "--reference", "throughput=1e12", "--reference",
       "quality=0.9", "--metric", "flops", "--metric=quality", "--window", "3",
       "--tolerance", "2.5", "--junit", "out.xml", "--json"},
      std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const RegressOptions& options = parsed->regress;
  EXPECT_EQ(options.references.size(), 2u);
  EXPECT_EQ(options.metrics,
            (std::vector<RegressMetric>{RegressMetric::kFlops,
                                        RegressMetric::kQuality}));
  EXPECT_EQ(options.window, 3);
  EXPECT_EQ(options.tolerance_pct, 2.5);
  EXPECT_EQ(options.junit_path, "out.xml");
  EXPECT_TRUE(parsed->json);
}

}  // namespace
}  // namespace hpcai500
