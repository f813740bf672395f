// VerifyFoundCheckpoint: a checkpoint found on disk is resumed from only
// when it is the run's, the probed attempt's, newer, whole and continuous
// with the stored lines.
#include "server/coordinator/found_checkpoint.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "common/checkpoint_manifest.h"
#include "tests/server/coordinator/test_events.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::MllogLine;

const std::string kMainSha(64, 'a');
const std::string kPartSha(64, 'b');

// Run 7's attempt 1 checkpointed epoch 2 with seqs 11..13.
CheckpointManifest Manifest() {
  CheckpointManifest m;
  m.run_id = 7;
  m.attempt = 1;
  m.epoch = 2;
  m.files = {{kMainSha, "checkpoint-epoch-000002.pt"},
             {kPartSha, "checkpoint-epoch-000002.rank-0.pt"}};
  m.events = {MllogLine("epoch_start", "null", 0, 11, 2),
              MllogLine("epoch_stop", "null", 0, 12, 2),
              MllogLine("hpcai500_checkpoint", "\"/c\"", 0, 13, 2)};
  return m;
}

// What the agent reports for `m` when the files on disk are the worker's.
v1::FoundCheckpoint Found(const CheckpointManifest& m) {
  v1::FoundCheckpoint found;
  found.set_attempt(1);
  found.set_manifest(FormatCheckpointManifest(m));
  found.set_digest(CheckpointDigest(m.files));
  return found;
}

// The coordinator: run 7, attempt 1 probed, resuming from epoch 1, rank 0
// stored through seq 10.
ResumeFacts Facts() {
  ResumeFacts facts;
  facts.run_id = 7;
  facts.probed_attempt = 1;
  facts.resume_epoch = 1;
  facts.epochs = 3;
  facts.stored_through_seq = 10;
  return facts;
}

void ExpectRefused(const v1::FoundCheckpoint& found, const ResumeFacts& facts,
                   const std::string& why) {
  absl::StatusOr<VerifiedCheckpoint> verified =
      VerifyFoundCheckpoint(found, facts);
  ASSERT_FALSE(verified.ok()) << "accepted; expected: " << why;
  EXPECT_EQ(verified.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(verified.status().message().find(why), std::string::npos)
      << verified.status();
}

TEST(VerifyFoundCheckpoint, AcceptsAWholeNewerCheckpointWithItsLines) {
  absl::StatusOr<VerifiedCheckpoint> verified =
      VerifyFoundCheckpoint(Found(Manifest()), Facts());
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_EQ(verified->attempt, 1);
  EXPECT_EQ(verified->epoch, 2);
  ASSERT_EQ(verified->events.size(), 3u);
  EXPECT_EQ(verified->events[0].first, 11);
  EXPECT_EQ(verified->events[2].first, 13);
  EXPECT_EQ(verified->events[2].second, Manifest().events[2]);
}

TEST(VerifyFoundCheckpoint, AcceptsLinesPartlyStoredAlready) {
  ResumeFacts facts = Facts();
  facts.stored_through_seq = 12;  // only the checkpoint event is missing
  EXPECT_TRUE(VerifyFoundCheckpoint(Found(Manifest()), facts).ok());
}

TEST(VerifyFoundCheckpoint, RefusesADigestOtherThanTheAgentComputed) {
  v1::FoundCheckpoint found = Found(Manifest());
  CheckpointManifest changed = Manifest();
  changed.files[1].sha256 = std::string(64, 'c');  // a part replaced since
  found.set_digest(CheckpointDigest(changed.files));
  ExpectRefused(found, Facts(), "digest");
}

TEST(VerifyFoundCheckpoint, RefusesAnotherAttemptOrRun) {
  CheckpointManifest other_attempt = Manifest();
  other_attempt.attempt = 2;
  ExpectRefused(Found(other_attempt), Facts(), "names attempt 2");
  v1::FoundCheckpoint other_folder = Found(Manifest());
  other_folder.set_attempt(3);
  ExpectRefused(other_folder, Facts(), "attempt 3's folder");
  CheckpointManifest other_run = Manifest();
  other_run.run_id = 8;
  ExpectRefused(Found(other_run), Facts(), "run 8's");
  ResumeFacts nothing_asked = Facts();
  nothing_asked.probed_attempt = 0;
  ExpectRefused(Found(Manifest()), nothing_asked, "was asked about");
}

TEST(VerifyFoundCheckpoint, RefusesAnEpochNotNewerOrPastTheBudget) {
  ResumeFacts facts = Facts();
  facts.resume_epoch = 2;
  ExpectRefused(Found(Manifest()), facts, "not newer than epoch 2");
  facts = Facts();
  facts.epochs = 1;
  ExpectRefused(Found(Manifest()), facts, "past the run's 1 epochs");
}

TEST(VerifyFoundCheckpoint, RefusesLinesThatLeaveAGapOrEndElsewhere) {
  ResumeFacts facts = Facts();
  facts.stored_through_seq = 9;  // seq 10 is lost
  ExpectRefused(Found(Manifest()), facts, "the lines between are lost");
  CheckpointManifest jump = Manifest();
  jump.events[1] = MllogLine("epoch_stop", "null", 0, 14, 2);
  ExpectRefused(Found(jump), Facts(), "seq 14");
  CheckpointManifest other_rank = Manifest();
  other_rank.events[0] = MllogLine("epoch_start", "null", 1, 11, 2);
  ExpectRefused(Found(other_rank), Facts(), "rank 1");
  CheckpointManifest no_checkpoint = Manifest();
  no_checkpoint.events.pop_back();
  ExpectRefused(Found(no_checkpoint), Facts(), "do not end with");
}

TEST(VerifyFoundCheckpoint, RefusesWhatTheAgentCouldNotReadOrParse) {
  v1::FoundCheckpoint unread = Found(Manifest());
  unread.set_digest("");
  unread.set_error("cannot read checkpoint-epoch-000002.pt");
  ExpectRefused(unread, Facts(), "could not read it");
  v1::FoundCheckpoint torn = Found(Manifest());
  torn.set_manifest(torn.manifest().substr(0, torn.manifest().size() - 5));
  ExpectRefused(torn, Facts(), "not ended");
}

}  // namespace
}  // namespace hpcai500
