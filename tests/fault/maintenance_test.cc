// hpcai500d stopped for a planned upgrade, longer than its node timeout,
// inside a maintenance window (`hpcai500 maintenance start`): the agent
// does not fence its worker, whose lease reaches past the window's end, the
// restarted coordinator does not declare the node lost, and the run
// succeeds on its one attempt with every event stored once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "common/worker_lease.h"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kNodeTimeoutSeconds[] = "5";

TEST(CoordinatorMaintenance, StoppedPastTheNodeTimeoutTheRunKeepsItsAttempt) {
  FaultCluster cluster;
  // Slowed down eleven-fold while the gate file exists, so the run still
  // trains when hpcai500d comes back after the lease wait and 12 s away
  // (four-fold, an idle machine finished it before the coordinator was even
  // stopped); at full speed after, so it ends soon on a loaded machine
  // (slowed throughout, it took 7 minutes there).
  const std::string gate = cluster.dir() + "/slow-while-this-exists";
  std::ofstream(gate).put('\n');
  pid_t worker = 0;
  const std::string run_id =
      cluster.StartSlowTraining(kNodeTimeoutSeconds, "maintenance", &worker,
                                /*slow_step_pct=*/1000, gate);
  ASSERT_FALSE(run_id.empty());
  ASSERT_GT(worker, 0);

  const CommandResult on = cluster.Cli(
      {"maintenance", "start", "--for", "60s", "--reason", "upgrade"});
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_NE(on.out.find("maintenance window: on until"), std::string::npos)
      << on.out;
  const CommandResult nodes = cluster.Cli({"nodes"});
  EXPECT_NE(nodes.out.find("maintenance window"), std::string::npos)
      << nodes.out;
  // The agent heard of it: the lease now reaches past the window's end.
  const std::string lease = cluster.AttemptDir("node-a", run_id, 1) + "/lease";
  const int64_t window_end_ms = absl::ToUnixMillis(absl::Now()) + 55'000;
  ASSERT_TRUE(
      WaitFor([&] { return ReadLeaseFile(lease).value_or(0) > window_end_ms; },
              seconds(30)));

  cluster.StopCoordinator(SIGTERM);
  // Gone more than twice the node timeout: without the window the agent
  // would fence the worker after 5 s.
  std::this_thread::sleep_for(seconds(12));
  const bool alive_after_stop = ProcessAlive(worker);
  EXPECT_TRUE(alive_after_stop);
  ASSERT_TRUE(
      cluster.StartCoordinator({"--node-timeout-s", kNodeTimeoutSeconds}));
  std::filesystem::remove(gate);

  const std::string state = cluster.WaitForEnd(run_id, seconds(400));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  EXPECT_EQ(run["attempts"].size(), 1u) << run.dump();
  EXPECT_EQ(cluster.CountResults(run_id), 1);
  const CommandResult off = cluster.Cli({"maintenance", "end"});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("no maintenance window"), std::string::npos)
      << off.out;

  cluster.ExpectAckedAndStoredOnce(
      run_id,
      "hpcai500d stopped 12 s (node timeout 5 s) in a 60 s maintenance window",
      std::string("worker ") + (alive_after_stop ? "trained on" : "stopped") +
          ", run " + state + " in " + std::to_string(run["attempts"].size()) +
          " attempt(s)");
}

}  // namespace
}  // namespace hpcai500::testing
