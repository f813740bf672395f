// What the agent does with attempts' checkpoint folders: reports the
// manifests newer than the resume point with its own digest of their
// files, and links a resumed checkpoint's main file with its ranks' parts.
#include "agent/attempts/attempt_checkpoints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/attempts/attempt_layout.h"
#include "common/checkpoint_manifest.h"
#include "common/worker_args.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

// Writes epoch `epoch`'s checkpoint file and its manifest into `dir`; the
// manifest's digest is of `content` as the worker wrote it.
void WriteCheckpoint(const std::string& dir, int64_t epoch,
                     const std::string& content) {
  std::filesystem::create_directories(dir);
  const std::string name = CheckpointFileName(epoch);
  std::ofstream(dir + "/" + name) << content;
  CheckpointManifest m;
  m.run_id = 12;
  m.attempt = 1;
  m.epoch = epoch;
  std::string error;
  m.files.push_back({"", name});
  ASSERT_TRUE(Sha256OfFile(dir + "/" + name, &m.files[0].sha256, &error));
  std::ofstream(dir + "/" + CheckpointManifestFileName(epoch))
      << FormatCheckpointManifest(m);
}

v1::Assignment Reserve(int32_t probe, int32_t resume_epoch) {
  v1::Assignment a;
  a.set_phase(v1::Assignment::PHASE_RESERVE);
  a.mutable_key()->set_run_id(12);
  a.mutable_key()->set_attempt(2);
  a.set_probe_checkpoints_attempt(probe);
  a.set_resume_from_attempt(resume_epoch > 0 ? 1 : 0);
  a.set_resume_from_epoch(resume_epoch);
  return a;
}

TEST(AddFoundCheckpoints, ReportsNewerManifestsOldestFirstWithTheirDigest) {
  const TempDir root;
  v1::AttemptKey first;
  first.set_run_id(12);
  first.set_attempt(1);
  const std::string dir = AttemptLayout::CheckpointDir(root.path(), first);
  WriteCheckpoint(dir, 1, "one");
  WriteCheckpoint(dir, 2, "two");
  WriteCheckpoint(dir, 3, "three");
  std::ofstream(dir + "/checkpoint-epoch-000003.pt") << "changed since";

  v1::PortReserved reply;
  AddFoundCheckpoints(root.path(), Reserve(/*probe=*/1, /*resume_epoch=*/1),
                      &reply);
  ASSERT_EQ(reply.found_checkpoints_size(), 2);
  for (const v1::FoundCheckpoint& found : reply.found_checkpoints()) {
    EXPECT_EQ(found.attempt(), 1);
    EXPECT_TRUE(found.error().empty()) << found.error();
  }
  CheckpointManifest two, three;
  std::string error;
  ASSERT_TRUE(ParseCheckpointManifest(reply.found_checkpoints(0).manifest(),
                                      &two, &error));
  ASSERT_TRUE(ParseCheckpointManifest(reply.found_checkpoints(1).manifest(),
                                      &three, &error));
  EXPECT_EQ(two.epoch, 2);
  EXPECT_EQ(reply.found_checkpoints(0).digest(), CheckpointDigest(two.files));
  EXPECT_EQ(three.epoch, 3);
  EXPECT_NE(reply.found_checkpoints(1).digest(), CheckpointDigest(three.files));

  v1::PortReserved none;
  AddFoundCheckpoints(root.path(), Reserve(/*probe=*/0, 1), &none);
  AddFoundCheckpoints(root.path(), Reserve(/*probe=*/2, 1), &none);  // itself
  EXPECT_EQ(none.found_checkpoints_size(), 0);
}

TEST(LinkResumeSource, LinksTheMainFileWithItsRanksPartsOnly) {
  const TempDir root;
  const std::string from = root.path() + "/attempt-1";
  const std::string to = root.path() + "/attempt-2";
  std::filesystem::create_directories(from);
  std::filesystem::create_directories(to);
  for (const char* name :
       {"checkpoint-epoch-000002.pt", "checkpoint-epoch-000002.rank-0.pt",
        "checkpoint-epoch-000002.rank-1.pt", "checkpoint-epoch-000002.manifest",
        "checkpoint-epoch-000001.pt", "checkpoint-epoch-000001.rank-0.pt"}) {
    std::ofstream(from + "/" + name) << name;
  }
  AttemptPlan plan;
  plan.checkpoint_dir = to;
  plan.resume_source = from + "/checkpoint-epoch-000002.pt";
  v1::AttemptKey key;
  key.set_run_id(12);
  key.set_attempt(2);
  LinkResumeSource(key, plan);
  std::vector<std::string> linked;
  for (const auto& entry : std::filesystem::directory_iterator(to)) {
    linked.push_back(entry.path().filename().string());
  }
  std::sort(linked.begin(), linked.end());
  EXPECT_EQ(linked,
            std::vector<std::string>({"checkpoint-epoch-000002.pt",
                                      "checkpoint-epoch-000002.rank-0.pt",
                                      "checkpoint-epoch-000002.rank-1.pt"}));
}

}  // namespace
}  // namespace hpcai500::agent
