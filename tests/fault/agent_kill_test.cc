// SIGKILL of an agent alone, its worker left training (slowed on purpose so
// that it trains past the node timeout). Gone for good, the agent renews no
// lease: the worker stops itself at the lease's deadline, writes no
// checkpoint after it, and the run's next attempt succeeds. Restarted in
// time, the agent takes the worker up and renews its lease: the worker
// trains on and the run succeeds on its one attempt. Killed before its
// worker (a full-size Fashion-MNIST run, at full speed) got to its lease,
// the agent still cannot keep that worker training past the deadline.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/worker_lease.h"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

int64_t LeaseDeadlineMs(FaultCluster& cluster, const std::string& run_id) {
  return ReadLeaseFile(cluster.AttemptDir("node-a", run_id, 1) + "/lease")
      .value_or(0);
}

// How many files of attempt 1's checkpoint folder were last written at or
// after `deadline_ms` (Unix milliseconds).
int CheckpointsWrittenFrom(FaultCluster& cluster, const std::string& run_id,
                           int64_t deadline_ms) {
  const std::string dir = cluster.agent_workdir("node-a") +
                          "/checkpoints/run-" + run_id + "/attempt-1";
  int late = 0;
  std::error_code ec;
  for (const auto& file : std::filesystem::directory_iterator(dir, ec)) {
    struct stat st;
    if (::stat(file.path().c_str(), &st) != 0) continue;
    const int64_t mtime_ms =
        int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000;
    if (mtime_ms >= deadline_ms) ++late;
  }
  return late;
}

TEST(AgentKilled, ItsWorkerStopsAtTheLeaseDeadlineAndTheRunMovesOn) {
  FaultCluster cluster;
  pid_t worker = 0;
  const std::string run_id =
      cluster.StartSlowTraining("5", "agent-killed", &worker);
  ASSERT_FALSE(run_id.empty());
  ASSERT_GT(worker, 0);

  cluster.StopAgent("node-a", SIGKILL);  // the worker trains on, alone
  const auto killed = std::chrono::steady_clock::now();
  // What the killed agent had had acknowledged: stored, whatever follows
  // (the restarted agent sends the rest, which is fenced: a given-up
  // attempt's).
  const int64_t acked_at_kill = cluster.AckedSeq("node-a", run_id, 1, 0);
  const int64_t deadline_ms = LeaseDeadlineMs(cluster, run_id);
  ASSERT_GT(deadline_ms, 0);
  // Within the node timeout (5 s) plus a margin for a loaded machine.
  ASSERT_TRUE(WaitFor([&] { return !ProcessAlive(worker); }, seconds(25)));
  const auto stopped_after = std::chrono::duration_cast<seconds>(
      std::chrono::steady_clock::now() - killed);
  const std::string stderr_text =
      ReadFile(cluster.RankFile("node-a", run_id, 1, 0, ".stderr"));
  EXPECT_NE(stderr_text.find("fenced: lease"), std::string::npos)
      << stderr_text;
  const int late_checkpoints =
      CheckpointsWrittenFrom(cluster, run_id, deadline_ms);
  EXPECT_EQ(late_checkpoints, 0);

  // Back after the timeout (at normal speed): the fenced worker counts as
  // lost, and the run's next attempt runs here and succeeds.
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  const std::string state = cluster.WaitForEnd(run_id, seconds(240));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_EQ(run["attempts"][0]["state"], "requeued");
  EXPECT_EQ(cluster.CountResults(run_id), 1);

  ASSERT_TRUE(cluster.WaitUntilAllStored("node-a", run_id, 2, 0, seconds(30)));
  cluster.ExpectStoredOnce(
      run_id,
      cluster.MissingUpTo(run_id, 1, 0, acked_at_kill) +
          cluster.LostEvents("node-a", run_id, 2, 0, /*acked_only=*/false),
      "SIGKILL of node-a's agent alone (node timeout 5 s)",
      "worker fenced itself " + std::to_string(stopped_after.count()) +
          " s later, " + std::to_string(late_checkpoints) +
          " checkpoints after the lease deadline, attempt 2 run " + state);
}

// An executable that waits `delay_s` seconds, then becomes the real worker
// (exec: the same process, still the agent's child); `--version` at once.
std::string WriteDelayedWorker(const std::string& dir, int delay_s) {
  const std::string path = dir + "/delayed-worker.sh";
  std::ofstream(path) << "#!/bin/sh\n[ \"$1\" = --version ] || sleep "
                      << delay_s << "\nexec '" << BinaryPath("hpcai500-worker")
                      << "' \"$@\"\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(AgentKilled, BeforeItsWorkerLookedItStillCannotKeepItPastTheLease) {
  // The window: from the agent's fork until the worker's lease watchdog
  // starts (LibTorch loads first: seconds on a busy node). A worker that
  // took its parent then for its lease's holder took init for it, and
  // trained on without end.
  constexpr int kDelayS = 5;
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator({"--node-timeout-s", "5"}));
  ASSERT_TRUE(cluster.StartAgent(
      "node-a", 1, {"--worker", WriteDelayedWorker(cluster.dir(), kDelayS)}));
  // The full data set: an epoch takes minutes, so the worker trains long
  // past its lease unless it stops itself.
  const CommandResult submit = cluster.Cli(
      {"submit",
       cluster.WriteSpec("full",
                         "name: full\nworkload: image_classification\n"
                         "config: fashion_mnist\nlevel: system\nnodes: 1\n"
                         "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\n"
                         "precision: fp32\nseed: 1\nsystem: loopback-cpu\n")});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string run_id = submit.out.substr(0, submit.out.find('\n'));
  pid_t worker = 0;
  ASSERT_TRUE(WaitFor(
      [&] { return (worker = cluster.WorkerPid("node-a", run_id, 1, 0)) > 0; },
      seconds(60)));
  const std::string stderr_path =
      cluster.RankFile("node-a", run_id, 1, 0, ".stderr");
  cluster.StopAgent("node-a", SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  // Whether the kill came before the worker looked (it should, by kDelayS).
  const bool before = ReadFile(stderr_path).find("lease") == std::string::npos;

  // The worker starts, follows its lease, and stops at the deadline (node
  // timeout 5 s) instead of training the epoch through; margins for load.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFile(stderr_path).find("following lease") !=
               std::string::npos;
      },
      seconds(120)))
      << ReadFile(stderr_path);
  ASSERT_TRUE(WaitFor([&] { return !ProcessAlive(worker); }, seconds(60)))
      << "worker " << worker << " trains on past its lease ("
      << LeaseDeadlineMs(cluster, run_id) << "): " << ReadFile(stderr_path);
  const auto stopped_after = std::chrono::duration_cast<seconds>(
      std::chrono::steady_clock::now() - killed);
  const std::string stderr_text = ReadFile(stderr_path);
  EXPECT_NE(stderr_text.find("fenced: lease"), std::string::npos)
      << stderr_text;
  const bool trained_an_epoch =
      ReadFile(cluster.RankFile("node-a", run_id, 1, 0, ".events"))
          .find("\"epoch_stop\"") != std::string::npos;
  EXPECT_FALSE(trained_an_epoch);
  PrintFaultFigures(
      "SIGKILL of node-a's agent right after it started a full-size worker "
      "(node timeout 5 s)",
      std::string("killed ") + (before ? "before" : "after") +
          " the worker looked at its lease; the worker fenced itself " +
          std::to_string(stopped_after.count()) + " s later",
      std::string("epochs trained ") + (trained_an_epoch ? ">= 1" : "0"));
}

TEST(AgentKilled, RestartedInTimeItTakesItsWorkerUpAndTheRunSucceeds) {
  FaultCluster cluster;
  // Long enough for an agent to restart and register on a loaded machine.
  // Slowed only until the new agent has taken the worker up: the slowdown
  // is a share of each step's time, so on a loaded machine a run slowed
  // throughout outlasts any fixed wait for its end.
  const std::string gate = cluster.dir() + "/slow-while-this-exists";
  std::ofstream(gate).put('\n');
  pid_t worker = 0;
  const std::string run_id = cluster.StartSlowTraining(
      "20", "agent-restarted", &worker, /*slow_step_pct=*/300, gate);
  ASSERT_FALSE(run_id.empty());
  ASSERT_GT(worker, 0);

  cluster.StopAgent("node-a", SIGKILL);
  const int64_t first_deadline_ms = LeaseDeadlineMs(cluster, run_id);
  cluster.LaunchSlowAgent("node-a");
  const std::string reattached =
      "reattached to worker pid " + std::to_string(worker);
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFile(cluster.agent_log("node-a")).find(reattached) !=
               std::string::npos;
      },
      seconds(30)));
  // The new agent renews the lease it found.
  EXPECT_TRUE(WaitFor(
      [&] { return LeaseDeadlineMs(cluster, run_id) > first_deadline_ms; },
      seconds(30)));

  std::filesystem::remove(gate);
  const std::string state = cluster.WaitForEnd(run_id, seconds(300));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster.ShowRun(run_id);
  EXPECT_EQ(run["attempts"].size(), 1u) << run.dump();
  const std::string stderr_text =
      ReadFile(cluster.RankFile("node-a", run_id, 1, 0, ".stderr"));
  EXPECT_EQ(stderr_text.find("fenced:"), std::string::npos) << stderr_text;
  EXPECT_EQ(cluster.CountResults(run_id), 1);

  cluster.ExpectAckedAndStoredOnce(
      run_id,
      "SIGKILL of node-a's agent alone, restarted at once (node timeout 20 s)",
      "worker taken up and its lease renewed, " +
          std::to_string(run["attempts"].size()) + " attempt(s), run " + state);
}

}  // namespace
}  // namespace hpcai500::testing
