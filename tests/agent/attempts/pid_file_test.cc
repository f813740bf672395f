// A rank's pid, acked and exit files: round trips, and a pid told from a
// process that reused it.
#include "agent/attempts/pid_file.h"

#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/agent/fakes.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

TEST(PidFile, RoundTripsPidAndStartTime) {
  TempDir dir;
  const std::string path = dir.path() + "/rank-0.pid";
  ASSERT_TRUE(WritePidFile(path, {1234, 987654321}).ok());
  absl::StatusOr<PidRecord> read = ReadPidFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->pid, 1234);
  EXPECT_EQ(read->start_time, 987654321u);
  // Written atomically: no temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(PidFile, MissingIsNotFoundAndGarbageIsInvalid) {
  TempDir dir;
  const std::string path = dir.path() + "/rank-0.pid";
  EXPECT_TRUE(absl::IsNotFound(ReadPidFile(path).status()));
  AppendToFile(path, "12 x\n");
  absl::StatusOr<PidRecord> read = ReadPidFile(path);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find(path), std::string::npos);
}

TEST(PidFile, LivenessNeedsTheSameStartTime) {
  PosixProcessLauncher processes;
  absl::StatusOr<uint64_t> mine = processes.StartTime(::getpid());
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_TRUE(IsSameProcessRunning({::getpid(), *mine}, processes));
  // Same pid, other start time: a reused pid is not our worker.
  EXPECT_FALSE(IsSameProcessRunning({::getpid(), *mine + 1}, processes));
  // A pid beyond pid_max never runs.
  EXPECT_FALSE(IsSameProcessRunning({(1 << 22) + 1, *mine}, processes));
}

TEST(AckedFile, MissingMeansZeroAndRoundTrips) {
  TempDir dir;
  const std::string path = dir.path() + "/rank-1.acked";
  EXPECT_EQ(ReadAckedSeq(path).value_or(-1), 0);
  ASSERT_TRUE(WriteAckedSeq(path, 41).ok());
  EXPECT_EQ(ReadAckedSeq(path).value_or(-1), 41);
}

TEST(ExitFile, RoundTripsCodeSignalAndError) {
  TempDir dir;
  const std::string path = dir.path() + "/rank-0.exit";
  ASSERT_TRUE(
      WriteExitFile(path, {{-1, 9}, "worker lost while the agent was down"})
          .ok());
  absl::StatusOr<ExitRecord> read = ReadExitFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->status.exit_code, -1);
  EXPECT_EQ(read->status.signal, 9);
  EXPECT_EQ(read->error, "worker lost while the agent was down");
}

}  // namespace
}  // namespace hpcai500::agent
