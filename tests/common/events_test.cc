#include "common/events.h"

#include <gtest/gtest.h>

#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::FixtureLines;

TEST(EventLine, ParsesEveryFixtureLineWithSeqRankAndEpoch) {
  std::vector<std::string> lines = FixtureLines("events/fmnist_rank1.mllog");
  ASSERT_EQ(lines.size(), 21u);
  int64_t expected_seq = 1;
  for (const std::string& line : lines) {
    absl::StatusOr<EventLine> event = ParseEventLine(line + "\n");
    ASSERT_TRUE(event.ok()) << event.status() << " in " << line;
    EXPECT_EQ(event->seq, expected_seq++);
    EXPECT_EQ(event->rank, 1);
  }
  absl::StatusOr<EventLine> stats = ParseEventLine(lines[10]);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->key, "hpcai500_epoch_stats");
  EXPECT_EQ(stats->epoch(), 1);
  EXPECT_EQ(stats->value["samples"].get<int>(), 3000);
  EXPECT_EQ(stats->event_type, "POINT_IN_TIME");
  EXPECT_EQ(stats->time_ms, 1764662410010);
}

TEST(EventLine, EpochIsMinusOneWithoutEpochNum) {
  absl::StatusOr<EventLine> event =
      ParseEventLine(FixtureLines("events/fmnist_rank0.mllog")[0]);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->epoch(), -1);
}

TEST(EventLine, RefusesEachMalformedFixtureLineNamingTheProblem) {
  std::vector<std::string> lines = FixtureLines("events/malformed.txt");
  ASSERT_EQ(lines.size(), 6u);
  const std::vector<std::string> expected = {"does not start with ':::MLLOG '",
                                             "metadata.seq",
                                             "metadata.seq",
                                             "'time_ms' is not a number",
                                             "not a JSON object",
                                             "no string 'key'"};
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<EventLine> event = ParseEventLine(lines[i]);
    ASSERT_FALSE(event.ok()) << lines[i];
    EXPECT_EQ(event.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(event.status().message().find(expected[i]), std::string::npos)
        << event.status();
  }
}

// Found by tests/fuzz/event_line_fuzzer: converting such a time_ms to
// int64_t was undefined behaviour (corpus/event_line/time-ms-overflow.txt).
TEST(EventLine, RefusesTimeOutsideTheInt64Range) {
  for (const std::string time : {"1e300", "-1e19", "98765432109876543210987"}) {
    absl::StatusOr<EventLine> event = ParseEventLine(
        std::string(kMllogPrefix) +
        "{\"key\": \"run_start\", \"time_ms\": " + time +
        ", \"event_type\": \"INTERVAL_START\", \"metadata\": {\"seq\": 1, "
        "\"rank\": 0}}");
    ASSERT_FALSE(event.ok()) << time;
    EXPECT_NE(event.status().message().find("'time_ms' is out of range"),
              std::string::npos)
        << event.status();
  }
  absl::StatusOr<EventLine> fractional = ParseEventLine(
      std::string(kMllogPrefix) +
      "{\"key\": \"run_start\", \"time_ms\": 1764662400000.5, "
      "\"event_type\": \"INTERVAL_START\", \"metadata\": {\"seq\": 1, "
      "\"rank\": 0}}");
  ASSERT_TRUE(fractional.ok()) << fractional.status();
  EXPECT_EQ(fractional->time_ms, 1764662400000);
}

TEST(EventLine, RefusesOversizedLine) {
  std::string line(kMllogPrefix);
  line += "{\"key\": \"";
  line += std::string(kMaxEventLineBytes, 'x');
  line += "\"}";
  absl::StatusOr<EventLine> event = ParseEventLine(line);
  ASSERT_FALSE(event.ok());
  EXPECT_NE(event.status().message().find("exceeds the limit"),
            std::string::npos);
}

}  // namespace
}  // namespace hpcai500
