// A node lost with its workers, and a node stopped past the timeout, on a
// two-agent cluster whose agents share a checkpoint folder. The run gets a
// new attempt on the other node that resumes from the last checkpoint; the
// stopped node's attempt is fenced when it wakes; the result is stored once.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// Short enough for a test, long enough that a loaded 2-core machine never
// misses it spuriously.
constexpr char kNodeTimeoutSeconds[] = "5";

TEST(NodeLost, NewAttemptOnTheOtherNodeResumesFromTheSharedCheckpoint) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartWithSharedCheckpoints(kNodeTimeoutSeconds));
  // Placed on node-a (name order); wait for its checkpoint of epoch 1.
  const std::string run_id =
      cluster.SubmitSmokeRunAndWaitUntilCheckpointed("node-lost");
  ASSERT_FALSE(run_id.empty());

  // The node dies: its worker and its agent, at once.
  const pid_t worker = cluster.WorkerPid("node-a", run_id, 1, 0);
  ASSERT_GT(worker, 0);
  kill(worker, SIGKILL);
  cluster.StopAgent("node-a", SIGKILL);

  const std::string state = cluster.WaitForEnd(run_id, seconds(240));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_EQ(run["attempts"][0]["state"], "requeued");
  EXPECT_NE(run["attempts"][0].value("error", "").find("node-a"),
            std::string::npos)
      << run.dump();
  EXPECT_EQ(run["attempts"][1]["nodes"][0], "node-b");
  EXPECT_EQ(run["attempts"][1].value("resumed_epoch", 0), 1) << run.dump();
  // Each epoch counted once: epoch 1 of attempt 1, epoch 2 of attempt 2.
  ASSERT_EQ(run["epochs"].size(), 2u) << run.dump();
  EXPECT_EQ(std::stoll(run["score"]["samples"].get<std::string>()), 2 * 6000);
  EXPECT_EQ(cluster.CountResults(run_id), 1);

  ASSERT_TRUE(cluster.WaitUntilAllStored("node-b", run_id, 2, 0, seconds(30)));
  // What node-a's agent had acknowledged must be stored; what it had not
  // sent died with the node.
  cluster.ExpectStoredOnce(
      run_id,
      cluster.LostEvents("node-a", run_id, 1, 0, /*acked_only=*/true) +
          cluster.LostEvents("node-b", run_id, 2, 0, /*acked_only=*/false),
      "SIGKILL of node-a (agent and worker) on 2 agents",
      "attempt 2 on node-b resumed after epoch 1, run " + state +
          ", result stored " + std::to_string(cluster.CountResults(run_id)) +
          "x");
}

TEST(NodeStopped, PastTheTimeoutItsAttemptIsFencedWhenItWakes) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartWithSharedCheckpoints(kNodeTimeoutSeconds));
  pid_t worker = 0;
  const std::string run_id =
      cluster.SubmitSmokeRunAndWaitUntilTraining("node-stopped", &worker);
  ASSERT_FALSE(run_id.empty());
  ASSERT_GT(worker, 0);

  cluster.SignalAgent("node-a", SIGSTOP);  // its worker trains on
  // Attempt 2 running: what it stored of attempt 1 before its start (the
  // lines of a checkpoint the stopped node's worker wrote, found on disk)
  // is in, and only what the woken node sends comes after.
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json run = cluster.ShowRun(run_id);
        return run.is_object() && run["attempts"].size() == 2 &&
               run["attempts"][1].value("state", "") == "running";
      },
      seconds(60)));
  const int64_t stored_before = cluster.CountStoredEvents(run_id, 1).rows;
  const bool worker_outlived_the_timeout = ProcessAlive(worker);
  cluster.SignalAgent("node-a", SIGCONT);

  // Woken, node-a's agent stops the stale attempt's worker.
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(worker); }, seconds(30)));
  const std::string state = cluster.WaitForEnd(run_id, seconds(240));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const int64_t stale_stored =
      cluster.CountStoredEvents(run_id, 1).rows - stored_before;
  EXPECT_EQ(stale_stored, 0) << "events of the fenced attempt were stored";
  EXPECT_EQ(cluster.CountResults(run_id), 1);

  ASSERT_TRUE(cluster.WaitUntilAllStored("node-b", run_id, 2, 0, seconds(30)));
  ExpectNoneLostOrStoredTwice(
      "SIGSTOP of node-a's agent past the node timeout, then SIGCONT",
      std::string("attempt 2 on node-b, ") +
          (worker_outlived_the_timeout ? "stale worker fenced on waking"
                                       : "stale worker had ended") +
          ", " + std::to_string(stale_stored) + " stale events stored, run " +
          state,
      /*events_lost=*/0, cluster.CountStoredEvents(run_id).stored_twice());
}

}  // namespace
}  // namespace hpcai500::testing
