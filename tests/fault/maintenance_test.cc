// hpcai500d stopped for a planned upgrade, longer than its node timeout,
// inside a maintenance window (`hpcai500 maintenance start`): the agent
// does not fence its worker, whose lease reaches past the window's end, the
// restarted coordinator does not declare the node lost, and the run
// succeeds on its one attempt with every event stored once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "common/worker_lease.h"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kSlowVar[] = "HPCAI500_TEST_SLOW_STEP_PCT";
const std::vector<std::string> kShortTimeout = {"--node-timeout-s", "5"};

TEST(CoordinatorMaintenance, StoppedPastTheNodeTimeoutTheRunKeepsItsAttempt) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator(kShortTimeout));
  // Slowed down, so the run still trains when hpcai500d comes back.
  ::setenv(kSlowVar, "300", 1);
  const bool started = cluster.StartAgent("node-a", 1, {"--env", kSlowVar});
  ::unsetenv(kSlowVar);
  ASSERT_TRUE(started);
  const std::string run_id = cluster.SubmitSmokeRun("maintenance");
  ASSERT_FALSE(run_id.empty());
  ASSERT_TRUE(WaitFor(
      [&] { return cluster.CountStoredKey(run_id, 1, "run_start") == 1; },
      seconds(120)));
  const pid_t worker = cluster.WorkerPid("node-a", run_id, 1, 0);
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
  ASSERT_TRUE(cluster.StartCoordinator(kShortTimeout));

  const std::string state = cluster.WaitForEnd(run_id, seconds(400));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  EXPECT_EQ(run["attempts"].size(), 1u) << run.dump();
  EXPECT_EQ(cluster.CountResults(run_id), 1);
  const CommandResult off = cluster.Cli({"maintenance", "end"});
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("no maintenance window"), std::string::npos)
      << off.out;

  ASSERT_TRUE(WaitFor(
      [&] {
        return std::filesystem::exists(cluster.AttemptDir("node-a", run_id, 1) +
                                       "/rank-0.done");
      },
      seconds(30)));
  const int64_t lost =
      cluster.LostEvents("node-a", run_id, 1, 0, /*acked_only=*/false);
  const StoredEventCounts stored = cluster.CountStoredEvents(run_id);
  EXPECT_GT(stored.distinct, 20);  // the counts are of real rows
  const int64_t twice = stored.rows - stored.distinct;
  PrintFaultSummary(
      "hpcai500d stopped 12 s (node timeout 5 s) in a 60 s maintenance window",
      std::string("worker ") + (alive_after_stop ? "trained on" : "stopped") +
          ", run " + state + " in " + std::to_string(run["attempts"].size()) +
          " attempt(s)",
      lost, twice);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(twice, 0);
  if (HasFailure()) cluster.KeepFiles();
}

}  // namespace
}  // namespace hpcai500::testing
