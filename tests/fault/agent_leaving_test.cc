// A pilot agent (--leave-on-stop) stopped the way Slurm ends an allocation:
// SIGTERM to the agent and to its worker at once. The agent tells the
// coordinator it leaves before it reports the killed worker, so the run gets
// its new attempt on the other node at once (the node timeout is far off),
// and every event the worker wrote reaches the database, once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

TEST(AgentLeaving, ItsRunGetsANewAttemptAtOnceWithNothingLost) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator({"--node-timeout-s", "300"}));
  for (const char* node : {"node-a", "node-b"}) {
    ASSERT_TRUE(cluster.StartAgent(node, 1, {"--leave-on-stop"}));
  }
  pid_t worker = 0;
  const std::string run_id =
      cluster.SubmitSmokeRunAndWaitUntilTraining("agent-leaving", &worker);
  ASSERT_FALSE(run_id.empty());
  ASSERT_GT(worker, 0);

  const auto signalled = std::chrono::steady_clock::now();
  cluster.SignalAgent("node-a", SIGTERM);
  kill(worker, SIGTERM);
  cluster.StopAgent("node-a", SIGTERM);  // waits for it to exit
  const auto left_after = std::chrono::steady_clock::now() - signalled;
  EXPECT_LT(left_after, seconds(15)) << "kill grace 10 s + 5 s";

  nlohmann::json run;
  ASSERT_TRUE(WaitFor(
      [&] {
        run = cluster.ShowRun(run_id);
        return run.is_object() && run["attempts"].size() == 2;
      },
      seconds(30)))
      << "no attempt 2 within 30 s of the leave (node timeout: 300 s)";
  EXPECT_NE(run["attempts"][0]
                .value("error", "")
                .find("node node-a left (agent stopped by SIGTERM)"),
            std::string::npos)
      << run.dump();
  EXPECT_EQ(run["attempts"][1]["nodes"][0], "node-b");
  const std::string state = cluster.WaitForEnd(run_id, seconds(420));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");

  // Everything the killed worker wrote was delivered before the agent left.
  std::ifstream events(cluster.RankFile("node-a", run_id, 1, 0, ".events"));
  std::string line;
  int written = 0;
  while (std::getline(events, line)) ++written;
  EXPECT_GT(written, 0) << "attempt 1's events file is gone or empty";
  ExpectNoneLostOrStoredTwice(
      "SIGTERM to node-a's pilot agent and its worker at once",
      "attempt 2 on node-b at once, run " + state,
      cluster.LostEvents("node-a", run_id, 1, 0, /*acked_only=*/false),
      cluster.CountStoredEvents(run_id).stored_twice());
}

}  // namespace
}  // namespace hpcai500::testing
