// hpcai500d killed with SIGKILL, with the real worker training: once in the
// middle of the run, once while the run finishes. Restarted on the same
// database, it takes the run up again and scores it; every event the worker
// wrote is stored once.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// Every event the worker wrote stored once, no line refused, the run
// scored once.
void ExpectEveryEventStoredOnce(FaultCluster& cluster,
                                const std::string& run_id,
                                const std::string& fault,
                                const std::string& what_happened) {
  const StoredEventCounts stored =
      cluster.ExpectAckedAndStoredOnce(run_id, fault, what_happened);
  EXPECT_EQ(stored.errors, 0);
  EXPECT_EQ(cluster.CountResults(run_id), 1);
}

TEST(CoordinatorKilled, MidRunTheRunCompletesWithEachEpochStoredOnce) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  const std::string run_id = cluster.SubmitSmokeRunAndWaitUntilTraining(
      "killed-mid-run", /*worker=*/nullptr);
  ASSERT_FALSE(run_id.empty());

  cluster.StopCoordinator(SIGKILL);
  std::this_thread::sleep_for(seconds(2));  // the worker trains on
  ASSERT_TRUE(cluster.StartCoordinator());

  const std::string state = cluster.WaitForEnd(run_id, seconds(240));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  EXPECT_EQ(run["attempts"].size(), 1u) << run.dump();
  ASSERT_EQ(run["epochs"].size(), 2u) << run.dump();
  EXPECT_EQ(run["epochs"][0]["epoch"], 1);
  EXPECT_EQ(run["epochs"][1]["epoch"], 2);
  EXPECT_EQ(cluster.CountStoredKey(run_id, 1, "hpcai500_epoch_stats"), 2);
  ExpectEveryEventStoredOnce(cluster, run_id, "SIGKILL of hpcai500d mid-run",
                             "restarted, run " + state + " in 1 attempt");
}

TEST(CoordinatorKilled, WhileTheRunFinishesTheRunStillSucceeds) {
  // The worker must finish while hpcai500d is down, before its agent fences
  // itself (no word for the node timeout): on a loaded machine the last
  // epoch took over the default 60 s and the agent stopped it.
  const std::vector<std::string> node_timeout = {"--node-timeout-s", "600"};
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator(node_timeout));
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  const std::string run_id =
      cluster.SubmitSmokeRunAndWaitUntilCheckpointed("killed-at-the-end");
  ASSERT_FALSE(run_id.empty());

  cluster.StopCoordinator(SIGKILL);
  // The worker finishes while nobody listens: its agent records the exit.
  ASSERT_TRUE(WaitFor(
      [&] {
        return std::filesystem::exists(
            cluster.RankFile("node-a", run_id, 1, 0, ".exit"));
      },
      seconds(300)));
  ASSERT_TRUE(cluster.StartCoordinator(node_timeout));

  const std::string state = cluster.WaitForEnd(run_id, seconds(120));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  EXPECT_TRUE(run.contains("score")) << run.dump();
  EXPECT_EQ(run["attempts"].size(), 1u) << run.dump();
  ExpectEveryEventStoredOnce(
      cluster, run_id, "SIGKILL of hpcai500d while the run finishes",
      "worker exited while it was down; restarted, run " + state);
}

}  // namespace
}  // namespace hpcai500::testing
