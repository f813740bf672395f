// `launcher: mpirun` on loopback with real processes: hpcai500d, two agents
// on this machine, Debian's mpirun and the real worker. Rank 0's agent
// starts one mpirun for both ranks; each agent follows the rank it holds.
// Skipped without /usr/bin/mpirun (package openmpi-bin).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kMpirun[] = "/usr/bin/mpirun";

class MpirunLauncher : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kMpirun, X_OK) != 0) {
      GTEST_SKIP() << "no " << kMpirun << " (Debian's openmpi-bin)";
    }
    ASSERT_TRUE(cluster_.StartCoordinator());
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
    // mpirun and its ranks run in sessions of their own and outlive the
    // agents: a run the test left behind (queued, starting or running) is
    // cancelled first.
    for (const std::string& run_id : runs_) {
      const std::string state = cluster_.WaitForEnd(run_id, seconds(0));
      if (state != "RUN_STATE_SUCCEEDED" && state != "RUN_STATE_FAILED" &&
          state != "RUN_STATE_CANCELLED") {
        cluster_.Cli({"cancel", run_id});
        cluster_.WaitForEnd(run_id, seconds(30));
      }
    }
  }
  // Submits a 2-node, 1-epoch run with `launcher: mpirun` (and `extra`).
  std::string Submit(const std::string& name, const std::string& extra = "") {
    const std::string run_id = cluster_.SubmitRun(
        name, /*seed=*/1, /*nodes=*/2, "launcher: mpirun\nepochs: 1\n" + extra);
    if (!run_id.empty()) runs_.push_back(run_id);
    return run_id;
  }

  FaultCluster cluster_;
  std::vector<std::string> runs_;
};

TEST_F(MpirunLauncher, TwoNodeRunOnLoopbackIsScoredWithEveryEvent) {
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  ASSERT_TRUE(cluster_.StartAgent("node-b", 1));
  const std::string run_id = Submit("mpirun-loopback");
  ASSERT_FALSE(run_id.empty());
  const std::string state = cluster_.WaitForEnd(run_id, seconds(300));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster_.ShowRun(run_id);
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  EXPECT_TRUE(run["score"].is_object()) << run.dump();
  // node-a (rank 0) ran the one mpirun; each agent found its own rank.
  const std::string app =
      cluster_.AttemptDir("node-a", run_id, 1) + "/mpirun.app";
  EXPECT_EQ(::access(app.c_str(), R_OK), 0) << app;
  EXPECT_GT(cluster_.WorkerPid("node-a", run_id, 1, 0), 0);
  EXPECT_GT(cluster_.WorkerPid("node-b", run_id, 1, 1), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_.LostEvents("node-a", run_id, 1, 0, false) == 0 &&
               cluster_.LostEvents("node-b", run_id, 1, 1, false) == 0;
      },
      seconds(30)));
  EXPECT_EQ(cluster_.CountStoredKey(run_id, 1, "run_stop"), 2);
  const StoredEventCounts stored = cluster_.CountStoredEvents(run_id);
  EXPECT_EQ(stored.rows, stored.distinct);
}

TEST_F(MpirunLauncher, CancelStopsTheWholeJob) {
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  ASSERT_TRUE(cluster_.StartAgent("node-b", 1));
  const std::string run_id = Submit("mpirun-cancel");
  ASSERT_FALSE(run_id.empty());
  ASSERT_TRUE(WaitFor(
      [&] { return cluster_.CountStoredKey(run_id, 1, "epoch_start") >= 2; },
      seconds(120)));
  const pid_t rank0 = cluster_.WorkerPid("node-a", run_id, 1, 0);
  const pid_t rank1 = cluster_.WorkerPid("node-b", run_id, 1, 1);
  ASSERT_GT(rank0, 0);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(cluster_.Cli({"cancel", run_id}).exit_code, 0);
  EXPECT_EQ(cluster_.WaitForEnd(run_id, seconds(60)), "RUN_STATE_CANCELLED");
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(rank0); }, seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(rank1); }, seconds(30)));
}

TEST_F(MpirunLauncher, UnreachableHostFailsTheRunWithMpirunsError) {
  // 127.0.0.2 is no address of this host's interfaces to mpirun: it starts
  // its daemon there with the rsh agent, which reaches nothing.
  ASSERT_TRUE(
      cluster_.StartAgent("node-a", 1, {"--mpirun-rsh-agent", "/bin/false"}));
  ASSERT_TRUE(cluster_.StartAgent(
      "node-b", 1,
      {"--address", "127.0.0.2", "--mpirun-rsh-agent", "/bin/false"}));
  const std::string run_id = Submit("mpirun-unreachable", "max_retries: 0\n");
  ASSERT_FALSE(run_id.empty());
  EXPECT_EQ(cluster_.WaitForEnd(run_id, seconds(120)), "RUN_STATE_FAILED");
  const nlohmann::json run = cluster_.ShowRun(run_id);
  const std::string error = run.value("error", "");
  EXPECT_NE(error.find("mpirun exited with code"), std::string::npos)
      << run.dump();
}

}  // namespace
}  // namespace hpcai500::testing
