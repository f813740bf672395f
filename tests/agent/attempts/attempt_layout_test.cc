// AttemptLayout: the names of an attempt's folders and files, both ways.
#include "agent/attempts/attempt_layout.h"

#include <gtest/gtest.h>

namespace hpcai500::agent {
namespace {

v1::AttemptKey Key(int64_t run_id, int attempt) {
  v1::AttemptKey key;
  key.set_run_id(run_id);
  key.set_attempt(attempt);
  return key;
}

TEST(AttemptLayout, BuildsTheAttemptFolderAndRankFiles) {
  const AttemptLayout layout("/var/lib/agent");
  EXPECT_EQ(layout.RunsDir(), "/var/lib/agent/runs");
  const std::string dir = layout.AttemptDir(Key(12, 2));
  EXPECT_EQ(dir, "/var/lib/agent/runs/12/attempt-2");
  EXPECT_EQ(AttemptLayout::RankPath(dir, 3, RankFile::kEvents),
            dir + "/rank-3.events");
  EXPECT_EQ(AttemptLayout::RankPath(dir, 3, RankFile::kPid),
            dir + "/rank-3.pid");
  EXPECT_EQ(AttemptLayout::RankPath(dir, 0, RankFile::kStderr),
            dir + "/rank-0.stderr");
}

TEST(AttemptLayout, PutsCheckpointsUnderTheRootByRunAndAttempt) {
  EXPECT_EQ(AttemptLayout::CheckpointDir("/lustre/ckpt", Key(12, 2)),
            "/lustre/ckpt/run-12/attempt-2");
  EXPECT_EQ(AttemptLayout::CheckpointPath("/lustre/ckpt", Key(12, 1), 7),
            "/lustre/ckpt/run-12/attempt-1/checkpoint-epoch-000007.pt");
}

TEST(AttemptLayout, ParsesBackWhatItBuilds) {
  const AttemptLayout layout("/w");
  const v1::AttemptKey key = Key(4200000000, 7);
  EXPECT_EQ(AttemptLayout::ParseRunDirName("4200000000"), 4200000000);
  EXPECT_EQ(AttemptLayout::ParseAttemptDirName("attempt-7"), 7);
  for (RankFile file :
       {RankFile::kEvents, RankFile::kStdout, RankFile::kStderr, RankFile::kPid,
        RankFile::kAcked, RankFile::kExit, RankFile::kDone}) {
    const std::string path =
        AttemptLayout::RankPath(layout.AttemptDir(key), 65535, file);
    const std::string name = path.substr(path.rfind('/') + 1);
    EXPECT_EQ(AttemptLayout::ParseRankFileName(name, file), 65535) << name;
  }
}

TEST(AttemptLayout, IgnoresNamesItDoesNotBuild) {
  EXPECT_FALSE(AttemptLayout::ParseRunDirName(""));
  EXPECT_FALSE(AttemptLayout::ParseRunDirName("-3"));
  EXPECT_FALSE(AttemptLayout::ParseRunDirName("12a"));
  EXPECT_FALSE(AttemptLayout::ParseRunDirName("1234567890123456789"));
  EXPECT_FALSE(AttemptLayout::ParseAttemptDirName("attempt-"));
  EXPECT_FALSE(AttemptLayout::ParseAttemptDirName("attempt-+1"));
  EXPECT_FALSE(AttemptLayout::ParseAttemptDirName("try-1"));
  EXPECT_FALSE(AttemptLayout::ParseAttemptDirName("attempt-1000001"));
  EXPECT_EQ(AttemptLayout::ParseAttemptDirName("attempt-1000000"), 1000000);
  EXPECT_FALSE(AttemptLayout::ParseRankFileName("rank-1.pid", RankFile::kExit));
  EXPECT_FALSE(AttemptLayout::ParseRankFileName("rank-.pid", RankFile::kPid));
  EXPECT_FALSE(
      AttemptLayout::ParseRankFileName("rank-65536.pid", RankFile::kPid));
  EXPECT_FALSE(
      AttemptLayout::ParseRankFileName("rank-1.pid.tmp", RankFile::kPid));
}

}  // namespace
}  // namespace hpcai500::agent
