#include "common/silence_deadline.h"

#include <gtest/gtest.h>

namespace hpcai500 {
namespace {

TEST(SilenceDeadline, WithoutWindowIsLastWordPlusTimeout) {
  EXPECT_EQ(SilenceDeadlineMs(/*last_heard_ms=*/10'000,
                              /*maintenance_until_ms=*/0,
                              /*node_timeout_ms=*/5'000),
            15'000);
}

TEST(SilenceDeadline, WindowEndingLaterCountsFromItsEnd) {
  EXPECT_EQ(SilenceDeadlineMs(10'000, /*maintenance_until_ms=*/70'000, 5'000),
            75'000);
}

TEST(SilenceDeadline, WindowThatEndedBeforeTheLastWordChangesNothing) {
  EXPECT_EQ(SilenceDeadlineMs(80'000, /*maintenance_until_ms=*/70'000, 5'000),
            85'000);
}

}  // namespace
}  // namespace hpcai500
