#include "common/log.h"

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::MatchesRegex;

absl::Time SomeTime() {
  return absl::FromCivil(absl::CivilSecond(2026, 1, 2, 3, 4, 5),
                         absl::UTCTimeZone()) +
         absl::Milliseconds(678);
}

TEST(Log, FormatsLevelUtcTimeProgramContextAndMessage) {
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, SomeTime(), "hpcai500-agent",
                          "node=a", "run=3 attempt=1: exited"),
            "W 2026-01-02T03:04:05.678Z hpcai500-agent node=a run=3 "
            "attempt=1: exited\n");
  EXPECT_EQ(
      FormatLogLine(LogLevel::kInfo, SomeTime(), "hpcai500d", "", "stopped"),
      "I 2026-01-02T03:04:05.678Z hpcai500d stopped\n");
  EXPECT_EQ(FormatLogLine(LogLevel::kError, SomeTime(), "p", "", "x")[0], 'E');
}

TEST(Log, OneRecordIsOneLineWhateverTheMessageHolds) {
  // An agent's address with a newline cannot forge a second record, nor an
  // ESC repaint the operator's terminal.
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, SomeTime(), "hpcai500d", "",
                          "node a: address 1\nI 2026 hpcai500d forged\x1b[2J"),
            "I 2026-01-02T03:04:05.678Z hpcai500d node a: address "
            "1\\nI 2026 hpcai500d forged\\x1b[2J\n");
}

TEST(Log, LinesFromManyThreadsNeverInterleave) {
  SetLogIdentity("log_test", "node=t");
  constexpr int kThreads = 4;
  constexpr int kLines = 200;
  ::testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) {
        LogInfo(absl::StrCat("thread ", t, " line ", i, " ",
                             std::string(200, 'x')));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string captured = ::testing::internal::GetCapturedStderr();
  std::istringstream lines(captured);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_THAT(line, MatchesRegex("I [-0-9T:.]+Z log_test node=t thread "
                                   "[0-9] line [0-9]+ x{200}"));
  }
  EXPECT_EQ(count, kThreads * kLines);
}

}  // namespace
}  // namespace hpcai500
