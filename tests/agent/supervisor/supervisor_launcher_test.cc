// The Supervisor with a launcher run (spec.launcher mpirun or srun): rank 0's
// node starts one launcher, every node follows the ranks it holds, which
// another process started, and stops them on cancel or fence.
#include <signal.h>

#include <string>
#include <vector>

#include "agent/supervisor/supervisor.h"
#include "agent/system/files.h"
#include "common/run_state.h"
#include "gtest/gtest.h"
#include "tests/agent/fakes.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

using Signals = std::vector<std::pair<pid_t, int>>;

int EventCount(const std::vector<v1::AgentMessage>& messages) {
  int n = 0;
  for (const v1::AgentMessage& m : messages) n += m.events().events_size();
  return n;
}

class LauncherRunTest : public ::testing::Test {
 protected:
  // A 2-node x 1-rank run; this agent is node `node_rank` (workdir dir_).
  v1::Assignment Start(const std::string& launcher, int node_rank) {
    v1::Assignment a = SmokeStart(9, {node_rank}, 2);
    a.mutable_spec()->set_launcher(launcher);
    a.set_node_rank(node_rank);
    if (node_rank == 0) {
      for (int node = 0; node < 2; ++node) {
        v1::LaunchNode* n = a.add_launch_nodes();
        n->set_name(node == 0 ? "node-a" : "node-b");
        n->set_address(node == 0 ? "10.0.0.1" : "10.0.0.2");
        n->add_ranks(node);
        n->set_workdir(node == 0 ? dir_.path() : "/elsewhere/agent-b");
        n->set_checkpoint_root(node == 0 ? dir_.path() + "/ckpt"
                                         : "/elsewhere/ckpt");
        n->set_cpus(2);
      }
    }
    return a;
  }
  std::unique_ptr<Supervisor> Make() {
    SupervisorOptions options;
    options.address = "127.0.0.1";
    options.node.workdir = dir_.path();
    options.node.worker_path = "/opt/hpcai500-worker";
    options.node.cpus = 2;
    options.node.checkpoint_root = dir_.path() + "/ckpt";
    options.kill_grace_ms = 10000;
    options.launchers.mpirun = "/usr/bin/mpirun";
    options.launchers.srun = "/usr/bin/srun";
    options.launchers.slurm_job_id = "77";
    return std::make_unique<Supervisor>(options, &processes_, &clock_);
  }
  std::string RankFile(int rank, const std::string& ext) {
    return dir_.path() + "/runs/9/attempt-1/rank-" + std::to_string(rank) + ext;
  }
  // The launcher starts rank `rank`'s worker as pid `pid`.
  void LauncherStartsRank(int rank, pid_t pid) {
    processes_.by_argument[RankFile(rank, ".events")] = pid;
    processes_.start_times[pid] = 9000 + pid;
  }
  // Slurm kills the srun step (pid 100) that runs rank 0 (pid 4242): the
  // rank ends without a final state, srun with 143 and slurmstepd's line.
  // Returns the exits reported once the launch settled (none before).
  std::vector<v1::WorkerExited> ScancelTheStep(Supervisor& supervisor) {
    AppendToFile(dir_.path() + "/runs/9/attempt-1/launcher.stderr",
                 "slurmstepd: error: *** STEP 77.1 ON node-a CANCELLED AT "
                 "2026-12-03T17:00:00 ***\n");
    processes_.start_times.erase(4242);
    processes_.exits[100] = ExitStatus{128 + SIGTERM, 0};
    EXPECT_TRUE(Exits(supervisor.Poll()).empty()) << "reported unsettled";
    clock_.now_ms += kLauncherSettleMs;
    return Exits(supervisor.Poll());
  }
  v1::Cancel CancelOf(const v1::Assignment& a) {
    v1::Cancel cancel;
    *cancel.mutable_key() = a.key();
    cancel.set_reason("user");
    return cancel;
  }

  TempDir dir_;
  FakeProcessLauncher processes_;
  FakeClock clock_;
};

TEST_F(LauncherRunTest, RankZeroNodeStartsOneMpirunAndWritesItsAppFile) {
  auto supervisor = Make();
  EXPECT_TRUE(supervisor->HandleAssignment(Start("mpirun", 0)).empty());
  ASSERT_EQ(processes_.launches.size(), 1u);
  EXPECT_EQ(processes_.launches[0].argv.front(), "/usr/bin/mpirun");
  const std::string app = dir_.path() + "/runs/9/attempt-1/mpirun.app";
  EXPECT_EQ(processes_.launches[0].argv.back(), app);
  const std::string text = ReadFileTail(app, 1 << 20);
  EXPECT_NE(text.find(RankFile(0, ".events")), std::string::npos);
  EXPECT_NE(text.find("/elsewhere/agent-b/runs/9/attempt-1/rank-1.events"),
            std::string::npos);
  ASSERT_EQ(supervisor->Running().size(), 1u);
  EXPECT_EQ(supervisor->Running()[0].ranks_size(), 1);
}

TEST_F(LauncherRunTest, OtherNodesStartNothingAndFollowTheirRanks) {
  auto supervisor = Make();
  EXPECT_TRUE(supervisor->HandleAssignment(Start("mpirun", 1)).empty());
  EXPECT_TRUE(processes_.launches.empty());
  EXPECT_TRUE(FileExists(dir_.path() + "/runs/9/attempt-1"));
  // Not started yet: still running for the coordinator.
  EXPECT_TRUE(Exits(supervisor->Poll()).empty());
  ASSERT_EQ(supervisor->Running().size(), 1u);

  LauncherStartsRank(1, 4242);
  AppendToFile(RankFile(1, ".events"),
               EventLineText(1, 1, "run_start") + EventLineText(2, 1));
  EXPECT_EQ(EventCount(supervisor->Poll()), 2);
  // Its pid file now names it, so a restarted agent reattaches.
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(1, ".pid"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(pid->pid, 4242);

  // It ends with its final state: exit 0 from run_stop.
  AppendToFile(RankFile(1, ".events"),
               EventLineText(3, 1, "run_stop", ", \"status\": \"success\""));
  processes_.start_times.erase(4242);
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].rank(), 1);
  EXPECT_EQ(exits[0].exit_code(), 0);
}

TEST_F(LauncherRunTest, RankEndedWithoutFinalStateIsLostAfterTheSettleTime) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("mpirun", 1));
  LauncherStartsRank(1, 4242);
  supervisor->Poll();
  processes_.start_times.erase(4242);  // killed: no run_stop
  EXPECT_TRUE(Exits(supervisor->Poll()).empty());
  clock_.now_ms += kFollowerSettleMs;
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].error(), ::hpcai500::kWorkerLostError);
}

TEST_F(LauncherRunTest, CancelSignalsTheLauncherAndEveryFollowedRank) {
  auto supervisor = Make();
  const v1::Assignment a = Start("mpirun", 0);
  supervisor->HandleAssignment(a);
  const pid_t mpirun = 100;  // the fake's first pid
  LauncherStartsRank(0, 4242);
  supervisor->Poll();
  supervisor->HandleCancel(CancelOf(a));
  // mpirun's group (it stops the whole job), and the rank itself, which
  // need not lead a group.
  EXPECT_EQ(processes_.signals, (Signals{{mpirun, SIGTERM}, {4242, SIGTERM}}));
  EXPECT_EQ(processes_.process_signals, (Signals{{4242, SIGTERM}}));
  processes_.signals.clear();
  processes_.process_signals.clear();
  clock_.now_ms += 10000;  // both ignore SIGTERM for the whole grace
  supervisor->Poll();
  EXPECT_EQ(processes_.signals, (Signals{{mpirun, SIGKILL}, {4242, SIGKILL}}));
  EXPECT_EQ(processes_.process_signals, (Signals{{4242, SIGKILL}}));
  processes_.exits[mpirun] = ExitStatus{-1, SIGKILL};
  processes_.start_times.erase(4242);
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].rank(), 0);
  EXPECT_TRUE(exits[0].cancelled().empty());
}

TEST_F(LauncherRunTest, FenceKillsFollowedRanksAndEndsOnesNeverStarted) {
  auto supervisor = Make();
  v1::Assignment a = Start("mpirun", 1);
  supervisor->HandleAssignment(a);
  EXPECT_EQ(supervisor->FenceAll("coordinator silent"), 1);
  // Nothing to signal yet; at the end of the grace it is given up.
  EXPECT_TRUE(processes_.process_signals.empty());
  clock_.now_ms += 10000;
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].error(), "cancelled before it started");

  // Another attempt whose rank runs: fencing signals it.
  a.mutable_key()->set_attempt(2);
  supervisor->HandleAssignment(a);
  processes_.by_argument[dir_.path() + "/runs/9/attempt-2/rank-1.events"] =
      5151;
  processes_.start_times[5151] = 1;
  supervisor->Poll();
  EXPECT_EQ(supervisor->FenceAll("coordinator silent"), 1);
  EXPECT_EQ(processes_.process_signals, (Signals{{5151, SIGTERM}}));
}

TEST_F(LauncherRunTest, FailedMpirunEndsRanksItNeverStartedWithItsError) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("mpirun", 0));
  AppendToFile(dir_.path() + "/runs/9/attempt-1/launcher.stderr",
               "ORTE was unable to reliably start one or more daemons.\n");
  processes_.exits[100] = ExitStatus{1, 0};
  // mpirun reaped, and the rank it never started ended with its error.
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].rank(), 0);
  EXPECT_EQ(exits[0].exit_code(), -1);
  EXPECT_NE(exits[0].error().find("mpirun exited with code 1 before rank 0 "
                                  "started"),
            std::string::npos)
      << exits[0].error();
  EXPECT_NE(exits[0].error().find("unable to reliably start"),
            std::string::npos);
  EXPECT_NE(exits[0].stderr_tail().find("ORTE"), std::string::npos);
}

TEST_F(LauncherRunTest, ScancelledSrunStepReportsItsRanksCancelled) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("srun", 0));
  ASSERT_EQ(processes_.launches.size(), 1u);
  EXPECT_EQ(processes_.launches[0].argv[1], "--jobid=77");
  LauncherStartsRank(0, 4242);
  supervisor->Poll();
  std::vector<v1::WorkerExited> exits = ScancelTheStep(*supervisor);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_NE(exits[0].cancelled().find("scancel"), std::string::npos);
}

TEST_F(LauncherRunTest, UnfoundRanksAreLookedForInOneProcessScanPerPoll) {
  auto supervisor = Make();
  // This node holds ranks 1 and 2 of 3.
  v1::Assignment a = SmokeStart(9, {1, 2}, 3);
  a.mutable_spec()->set_launcher("mpirun");
  a.set_node_rank(1);
  EXPECT_TRUE(supervisor->HandleAssignment(a).empty());
  supervisor->Poll();
  EXPECT_EQ(processes_.process_scans, 1) << "one look for both ranks";
  LauncherStartsRank(1, 4242);
  supervisor->Poll();
  EXPECT_EQ(processes_.process_scans, 2);
  LauncherStartsRank(2, 4343);
  supervisor->Poll();
  EXPECT_EQ(processes_.process_scans, 3) << "rank 2 still to find";
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(2, ".pid"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(pid->pid, 4343);
  supervisor->Poll();
  EXPECT_EQ(processes_.process_scans, 3) << "both found: no more looks";
}

TEST_F(LauncherRunTest, RestartedAgentKeepsTheScancelledVerdictOfItsReport) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("srun", 0));
  LauncherStartsRank(0, 4242);
  supervisor->Poll();
  ASSERT_EQ(ScancelTheStep(*supervisor).size(), 1u);

  // Restarted before the coordinator acknowledged the exit: it is sent
  // again, still cancelled (not a lost worker, which would be retried).
  supervisor = Make();
  EXPECT_EQ(supervisor->Reattach(), 1);
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Resend());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_NE(exits[0].cancelled().find("scancel"), std::string::npos)
      << exits[0].DebugString();
}

TEST_F(LauncherRunTest, RestartedAgentReattachesToItsLauncherAndStopsIt) {
  auto supervisor = Make();
  const v1::Assignment a = Start("mpirun", 0);
  supervisor->HandleAssignment(a);
  const pid_t mpirun = 100;  // the fake's first pid
  LauncherStartsRank(0, 4242);
  supervisor->Poll();

  supervisor = Make();
  EXPECT_EQ(supervisor->Reattach(), 1);
  processes_.signals.clear();
  supervisor->HandleCancel(CancelOf(a));
  EXPECT_EQ(processes_.signals, (Signals{{mpirun, SIGTERM}, {4242, SIGTERM}}));
  // Not its child any more: seen ending by its pid.
  processes_.start_times.erase(mpirun);
  processes_.start_times.erase(4242);
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].rank(), 0);
  EXPECT_EQ(supervisor->Running().size(), 1u) << "until acknowledged";
}

TEST_F(LauncherRunTest, RestartedAgentEndsRanksItsGoneLauncherNeverStarted) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("mpirun", 0));
  supervisor->Poll();                 // rank 0 not started yet
  processes_.start_times.erase(100);  // mpirun died with the agent down

  supervisor = Make();
  EXPECT_EQ(supervisor->Reattach(), 1);
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_NE(exits[0].error().find("mpirun ended before rank 0 started"),
            std::string::npos)
      << exits[0].error();
}

TEST_F(LauncherRunTest, RestartedAgentStillFollowsARankNotStartedYet) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start("srun", 1));
  supervisor->Poll();

  supervisor = Make();
  EXPECT_EQ(supervisor->Reattach(), 1);
  LauncherStartsRank(1, 4242);
  supervisor->Poll();
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(1, ".pid"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(pid->pid, 4242);
  ASSERT_EQ(supervisor->Running().size(), 1u);
  EXPECT_EQ(supervisor->Running()[0].ranks_size(), 1);
}

TEST_F(LauncherRunTest, BadLaunchNodesAreRefusedWithoutStartingAnything) {
  auto supervisor = Make();
  v1::Assignment a = Start("mpirun", 0);
  a.mutable_launch_nodes(1)->set_workdir("not/absolute");
  std::vector<v1::WorkerExited> exits = Exits(supervisor->HandleAssignment(a));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_NE(exits[0].error().find("mpirun: assignment: launch_nodes[1]"),
            std::string::npos)
      << exits[0].error();
  EXPECT_TRUE(processes_.launches.empty());
  EXPECT_EQ(supervisor->attempt_count(), 0u);
}

}  // namespace
}  // namespace hpcai500::agent
