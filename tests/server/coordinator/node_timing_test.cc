#include "server/coordinator/node_timing.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

TEST(HeartbeatIntervalMs, DefaultIsFiveSecondsOrAThirdOfTheTimeout) {
  EXPECT_EQ(*HeartbeatIntervalMs(60'000, 0), 5'000);
  EXPECT_EQ(*HeartbeatIntervalMs(6'000, 0), 2'000);
  EXPECT_EQ(*HeartbeatIntervalMs(1'000, 0), 333);
}

TEST(HeartbeatIntervalMs, TakesAnIntervalUpToAThirdOfTheTimeout) {
  EXPECT_EQ(*HeartbeatIntervalMs(600'000, 1'000), 1'000);
  EXPECT_EQ(*HeartbeatIntervalMs(3'000, 1'000), 1'000);
  EXPECT_EQ(*HeartbeatIntervalMs(600'000, 200'000), 200'000);
}

TEST(HeartbeatIntervalMs, RefusesMoreThanAThirdOfTheTimeoutNamingBothFlags) {
  absl::StatusOr<int32_t> refused = HeartbeatIntervalMs(60'000, 30'000);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("--heartbeat-interval-s"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--node-timeout-s 60"));
  EXPECT_FALSE(HeartbeatIntervalMs(2'000, 1'000).ok());
  EXPECT_FALSE(HeartbeatIntervalMs(60'000, -1'000).ok());
}

}  // namespace
}  // namespace hpcai500
