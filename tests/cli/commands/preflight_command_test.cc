// FormatPreflight: what `hpcai500 preflight` prints (cli/commands/
// preflight_command.h).
#include "cli/commands/preflight_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PreflightCommand, OneRowPerNodeWithTheVerdictAndTheEvidenceUnder) {
  v1::PreflightResponse response;
  v1::PreflightResult* ok = response.add_results();
  ok->set_node("node-a");
  ok->set_device("cpu");
  (*ok->mutable_figures())["gemm_gflops"] = 47.31;
  (*ok->mutable_figures())["memory_gbps"] = 7.65;
  ok->set_seconds(4.94);
  v1::PreflightResult* slow = response.add_results();
  slow->set_node("node-c");
  slow->set_device("cpu");
  (*slow->mutable_figures())["gemm_gflops"] = 6.04;
  slow->set_seconds(5.1);
  slow->set_flagged(true);
  slow->set_drained(true);
  slow->set_evidence("gemm_gflops 6.037 GFLOP/s: -87% (z -12.0)");
  v1::PreflightResult* failed = response.add_results();
  failed->set_node("node-d");
  failed->set_error("no answer within 25 s");
  const std::string text = FormatPreflight(response);
  EXPECT_THAT(text, HasSubstr("node    device  gemm GFLOP/s  memory GB/s"));
  EXPECT_THAT(text, HasSubstr("47.3"));
  EXPECT_THAT(text, HasSubstr("7.65"));
  EXPECT_THAT(text, HasSubstr("FLAGGED, drained"));
  EXPECT_THAT(text, HasSubstr("failed: no answer within 25 s"));
  EXPECT_THAT(
      text, HasSubstr("  node-c: gemm_gflops 6.037 GFLOP/s: -87% (z -12.0)\n"));
  EXPECT_THAT(text, Not(HasSubstr("  node-a:")));
}

}  // namespace
}  // namespace hpcai500
