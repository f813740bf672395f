// The command lines of the result-bundle commands (export, verify, replay):
// their arguments and flags as ParseCliArgs reads them.
#include <string>

#include "cli/args/parse_cli_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

TEST(BundleArgs, ExportTakesAnIdOutAndSubmission) {
  absl::StatusOr<CliArgs> parsed = ParseCliArgs(
      {"export", "12", "--submission", "--out", "r.bundle"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, "export");
  EXPECT_EQ(parsed->positional.at(0), "12");
  EXPECT_TRUE(parsed->submission);
  EXPECT_EQ(parsed->out, "r.bundle");
}

TEST(BundleArgs, ExportNeedsOut) {
  absl::StatusOr<CliArgs> parsed = ParseCliArgs({"export", "12"}, std::nullopt);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("'export' needs --out"));
}

TEST(BundleArgs, VerifyTakesAFileAndJson) {
  absl::StatusOr<CliArgs> parsed =
      ParseCliArgs({"verify", "r.bundle", "--json"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->positional.at(0), "r.bundle");
  EXPECT_TRUE(parsed->json);
  EXPECT_FALSE(ParseCliArgs({"verify"}, std::nullopt).ok());
  EXPECT_FALSE(
      ParseCliArgs({"verify", "r.bundle", "--out", "x"}, std::nullopt).ok());
}

TEST(BundleArgs, ReplayTakesAFile) {
  absl::StatusOr<CliArgs> parsed =
      ParseCliArgs({"replay", "r.bundle"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->command, "replay");
  EXPECT_FALSE(ParseCliArgs({"replay", "a", "b"}, std::nullopt).ok());
}

}  // namespace
}  // namespace hpcai500
