// A node killed right after its worker wrote a checkpoint whose event the
// coordinator never stored: the next attempt resumes from that checkpoint
// (found on the shared root with its manifest, checked, its epoch's lines
// stored from the manifest), not from the one before, and the run scores
// every epoch once.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// Long enough for the stopped agent's worker (its lease counts from the
// agent's last word) to finish epoch 1's evaluation and checkpoint.
constexpr char kNodeTimeoutSeconds[] = "8";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(UnackedCheckpoint, NextAttemptResumesFromTheCheckpointFoundOnDisk) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartWithSharedCheckpoints(kNodeTimeoutSeconds));
  const std::string shared = cluster.SharedCheckpointRoot();
  const std::string run_id = cluster.SubmitSmokeRun("unacked-checkpoint");
  ASSERT_FALSE(run_id.empty());

  // Placed on node-a (name order). Once its worker evaluates epoch 1, the
  // agent is stopped: nothing it has not sent yet reaches the coordinator,
  // and the checkpoint and its event come after.
  const std::string events =
      cluster.RankFile("node-a", run_id, 1, 0, ".events");
  ASSERT_TRUE(
      WaitFor([&] { return Contains(ReadFile(events), "\"eval_start\""); },
              seconds(120)));
  cluster.SignalAgent("node-a", SIGSTOP);
  const std::string manifest =
      shared + "/run-" + run_id + "/attempt-1/checkpoint-epoch-000001.manifest";
  ASSERT_TRUE(
      WaitFor([&] { return std::filesystem::exists(manifest); }, seconds(60)))
      << "the worker wrote no checkpoint manifest";
  // The node dies: its worker and its (stopped) agent, at once.
  const pid_t worker = cluster.WorkerPid("node-a", run_id, 1, 0);
  ASSERT_GT(worker, 0);
  kill(worker, SIGKILL);
  cluster.StopAgent("node-a", SIGKILL);
  ASSERT_EQ(cluster.CountStoredKey(run_id, 1, "hpcai500_checkpoint"), 0)
      << "the checkpoint's event reached the coordinator: no fault to test";

  const std::string state = cluster.WaitForEnd(run_id, seconds(240));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_EQ(run["attempts"][1]["nodes"][0], "node-b");
  EXPECT_EQ(run["attempts"][1].value("resume_from_attempt", 0), 1)
      << run.dump();
  EXPECT_EQ(run["attempts"][1].value("resumed_epoch", 0), 1) << run.dump();
  EXPECT_TRUE(Contains(ReadFile(cluster.dir() + "/hpcai500d.log"),
                       "resumes from attempt 1's checkpoint of epoch 1, "
                       "found complete on disk"));
  // Epoch 1 from attempt 1 (its lines stored from the manifest), epoch 2
  // from attempt 2: each once.
  EXPECT_EQ(cluster.CountStoredKey(run_id, 1, "hpcai500_checkpoint"), 1);
  EXPECT_EQ(cluster.CountStoredKey(run_id, 2, "epoch_start"), 1);
  ASSERT_EQ(run["epochs"].size(), 2u) << run.dump();
  EXPECT_EQ(std::stoll(run["score"]["samples"].get<std::string>()), 2 * 6000);
  EXPECT_EQ(cluster.CountResults(run_id), 1);

  ASSERT_TRUE(cluster.WaitUntilAllStored("node-b", run_id, 2, 0, seconds(30)));
  // Of attempt 1, every line through the checkpoint's event must be stored
  // (what node-a had sent, and the rest from the manifest).
  const int64_t lost =
      cluster.MissingUpTo(run_id, 1, 0,
                          cluster.CountStoredEvents(run_id, 1).max_seq) +
      cluster.LostEvents("node-a", run_id, 1, 0, /*acked_only=*/true) +
      cluster.LostEvents("node-b", run_id, 2, 0, /*acked_only=*/false);
  cluster.ExpectStoredOnce(
      run_id, lost,
      "node-a's agent stopped at epoch 1's evaluation, node killed once the "
      "checkpoint's manifest appeared (its event unsent)",
      "attempt 2 on node-b resumed after epoch 1 from the checkpoint found "
      "on disk, run " +
          state);
}

}  // namespace
}  // namespace hpcai500::testing
