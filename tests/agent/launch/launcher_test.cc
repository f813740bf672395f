// PlanLauncher and ClassifyLauncherExit: the mpirun and srun launches built
// from an assignment, and how a launch ended.
#include "agent/launch/launcher.h"

#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/agent/fakes.h"

namespace hpcai500::agent {
namespace {

// Rank 0's PHASE_START of a 2-node x 2-rank launcher run: node-a (this one)
// and node-b, each with its own workdir and checkpoint root.
v1::Assignment LauncherStart(const std::string& launcher) {
  v1::Assignment a = SmokeStart(7, {0, 1}, 4);
  a.mutable_key()->set_attempt(2);
  a.mutable_spec()->set_epochs(2);
  a.mutable_spec()->set_launcher(launcher);
  a.set_master_addr("10.0.0.1");
  for (int node = 0; node < 2; ++node) {
    v1::LaunchNode* n = a.add_launch_nodes();
    const std::string letter(1, static_cast<char>('a' + node));
    n->set_name("node-" + letter);
    n->set_address("10.0.0." + std::to_string(node + 1));
    n->add_ranks(2 * node);
    n->add_ranks(2 * node + 1);
    n->set_workdir("/srv/agent-" + letter);
    n->set_checkpoint_root("/ckpt/" + letter);
    n->set_cpus(8 * (node + 1));
    n->set_iface(node == 0 ? "eth1" : "ib0");
  }
  return a;
}

NodeContext LauncherNode() {
  NodeContext node;
  node.workdir = "/srv/agent-a";
  node.worker_path = "/opt/hpcai500/hpcai500-worker";
  node.cpus = 8;
  node.base_env = {"PATH=/usr/bin:/bin", "GLOO_SOCKET_IFNAME=eth1",
                   "MASTER_PORT=1"};
  node.checkpoint_root = "/ckpt/a";
  return node;
}

LauncherSettings Settings() {
  LauncherSettings settings;
  settings.mpirun = "/usr/bin/mpirun";
  settings.rsh_agent = "/opt/rsh";
  settings.srun = "/usr/bin/srun";
  settings.slurm_job_id = "1234";
  return settings;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

const char kAttempt[] = "/srv/agent-a/runs/7/attempt-2";

TEST(PlanLauncher, MpirunAppFileHasOneLinePerRankInRankOrder) {
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kMpirun, LauncherStart("mpirun"), LauncherNode(),
                   Settings(), kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->config_path, std::string(kAttempt) + "/mpirun.app");
  const std::vector<std::string> lines = Lines(plan->config_text);
  ASSERT_EQ(lines.size(), 4u);
  // The agent's own variables by name; each node's --iface by value.
  const std::string exports[] = {
      " -x PATH -x MASTER_ADDR -x MASTER_PORT -x GLOO_SOCKET_IFNAME=eth1 "
      "-x NCCL_SOCKET_IFNAME=eth1 ",
      " -x PATH -x MASTER_ADDR -x MASTER_PORT -x GLOO_SOCKET_IFNAME=ib0 "
      "-x NCCL_SOCKET_IFNAME=ib0 "};
  const char* hosts[] = {"10.0.0.1:2", "10.0.0.1:2", "10.0.0.2:2",
                         "10.0.0.2:2"};
  const char* workdirs[] = {"/srv/agent-a", "/srv/agent-a", "/srv/agent-b",
                            "/srv/agent-b"};
  for (int rank = 0; rank < 4; ++rank) {
    const std::string& line = lines[rank];
    SCOPED_TRACE(line);
    EXPECT_EQ(line.rfind(std::string("-np 1 -host ") + hosts[rank] +
                             exports[rank / 2] +
                             "/opt/hpcai500/hpcai500-worker --workload ",
                         0),
              0u);
    // Its own events file, in its node's attempt folder.
    EXPECT_NE(
        line.find(std::string(" --events-file ") + workdirs[rank] +
                  "/runs/7/attempt-2/rank-" + std::to_string(rank) + ".events"),
        std::string::npos);
    // That node's checkpoint root and CPUs (8 and 16 over 2 ranks).
    EXPECT_NE(line.find(std::string(" --checkpoint-dir /ckpt/") +
                        (rank < 2 ? "a" : "b") + "/run-7/attempt-2"),
              std::string::npos);
    EXPECT_NE(line.find(rank < 2 ? " --threads 4" : " --threads 8"),
              std::string::npos);
  }
}

TEST(PlanLauncher, MpirunArgvTakesTheRshAgentAndRendezvousEnvironment) {
  LauncherSettings settings = Settings();
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kMpirun, LauncherStart("mpirun"), LauncherNode(),
                   settings, kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->launch.argv, (std::vector<std::string>{
                                   "/usr/bin/mpirun", "--mca", "plm_rsh_agent",
                                   "/opt/rsh", "--bind-to", "none", "--app",
                                   std::string(kAttempt) + "/mpirun.app"}));
  // The rendezvous replaces any of the agent's own; the interface is set
  // per node in the app file.
  EXPECT_EQ(plan->launch.env, (std::vector<std::string>{"PATH=/usr/bin:/bin",
                                                        "MASTER_ADDR=10.0.0.1",
                                                        "MASTER_PORT=29500"}));
  EXPECT_EQ(plan->launch.stderr_path,
            std::string(kAttempt) + "/launcher.stderr");
  EXPECT_TRUE(plan->hostfile_path.empty());
  // No torchrun variables: the worker must read OpenMPI's.
  EXPECT_EQ(plan->config_text.find("RANK"), std::string::npos);

  settings.as_root = true;
  plan = PlanLauncher(Launcher::kMpirun, LauncherStart("mpirun"),
                      LauncherNode(), settings, kAttempt);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->launch.argv[1], "--allow-run-as-root");
}

TEST(PlanLauncher, SrunRunsOneStepWithAMultiProgFileAndArbitraryLayout) {
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kSrun, LauncherStart("srun"), LauncherNode(),
                   Settings(), kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string conf = std::string(kAttempt) + "/srun.conf";
  EXPECT_EQ(plan->launch.argv,
            (std::vector<std::string>{
                "/usr/bin/srun", "--jobid=1234", "--overlap",
                "--nodelist=node-a,node-b", "--nodes=2", "--ntasks=4",
                "--distribution=arbitrary", "--cpu-bind=none",
                "--kill-on-bad-exit=1", "--export=ALL",
                "--job-name=hpcai500-run-7-attempt-2", "--multi-prog", conf}));
  EXPECT_EQ(plan->config_path, conf);
  const std::vector<std::string> lines = Lines(plan->config_text);
  ASSERT_EQ(lines.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(lines[rank].rfind(std::to_string(rank) +
                                    " /opt/hpcai500/hpcai500-worker --workload",
                                0),
              0u)
        << lines[rank];
    EXPECT_NE(lines[rank].find(
                  std::string("/srv/agent-") + (rank < 2 ? "a" : "b") +
                  "/runs/7/attempt-2/rank-" + std::to_string(rank) + ".events"),
              std::string::npos);
  }
  // Task i runs on the i-th line's node.
  EXPECT_EQ(plan->hostfile_text, "node-a\nnode-a\nnode-b\nnode-b\n");
  EXPECT_EQ(plan->hostfile_path, std::string(kAttempt) + "/srun.hosts");
  EXPECT_NE(std::find(plan->launch.env.begin(), plan->launch.env.end(),
                      "SLURM_HOSTFILE=" + plan->hostfile_path),
            plan->launch.env.end());
  for (const std::string& kv : plan->launch.env) {
    EXPECT_NE(kv.rfind("SLURM_CONF=", 0), 0u) << "the agent has none: " << kv;
  }
}

TEST(PlanLauncher, SrunFindsTheClustersConfigWhereTheAgentDoes) {
  LauncherSettings settings = Settings();
  settings.slurm_conf = "/etc/slurm-test/slurm.conf";
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kSrun, LauncherStart("srun"), LauncherNode(),
                   settings, kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(std::find(plan->launch.env.begin(), plan->launch.env.end(),
                      "SLURM_CONF=/etc/slurm-test/slurm.conf"),
            plan->launch.env.end());
  // srun's alone: the ranks' lines do not carry it.
  EXPECT_EQ(plan->config_text.find("SLURM_CONF"), std::string::npos);
}

TEST(PlanLauncher, SrunSetsTheInterfaceOnlyWhenEveryNodeSharesIt) {
  v1::Assignment a = LauncherStart("srun");
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kSrun, a, LauncherNode(), Settings(), kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const std::string& kv : plan->launch.env) {
    EXPECT_EQ(kv.find("SOCKET_IFNAME"), std::string::npos) << kv;
  }
  a.mutable_launch_nodes(1)->set_iface("eth1");
  plan = PlanLauncher(Launcher::kSrun, a, LauncherNode(), Settings(), kAttempt);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(std::find(plan->launch.env.begin(), plan->launch.env.end(),
                      "NCCL_SOCKET_IFNAME=eth1"),
            plan->launch.env.end());
}

TEST(PlanLauncher, SrunOutsideAnAllocationIsRefused) {
  LauncherSettings settings = Settings();
  settings.slurm_job_id = "";
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kSrun, LauncherStart("srun"), LauncherNode(),
                   settings, kAttempt);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("SLURM_JOB_ID"), std::string::npos);
}

TEST(PlanLauncher, RefusesLaunchNodesThatMissOrMisorderRanks) {
  v1::Assignment a = LauncherStart("mpirun");
  a.mutable_launch_nodes(1)->set_ranks(0, 3);
  a.mutable_launch_nodes(1)->set_ranks(1, 2);
  absl::StatusOr<LauncherPlan> plan =
      PlanLauncher(Launcher::kMpirun, a, LauncherNode(), Settings(), kAttempt);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("launch_nodes[1].ranks"),
            std::string::npos)
      << plan.status();

  a = LauncherStart("mpirun");
  a.mutable_launch_nodes()->RemoveLast();
  plan =
      PlanLauncher(Launcher::kMpirun, a, LauncherNode(), Settings(), kAttempt);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("hold 2 ranks of 4"),
            std::string::npos)
      << plan.status();

  a = LauncherStart("mpirun");
  a.clear_launch_nodes();
  EXPECT_FALSE(
      PlanLauncher(Launcher::kMpirun, a, LauncherNode(), Settings(), kAttempt)
          .ok());
}

TEST(PlanLauncher, RefusesPathsAndHostsTheLauncherFilesCannotHold) {
  for (const char* workdir :
       {"relative/dir", "/with space", "/a/../etc", "/pct%t", "/q'uote"}) {
    v1::Assignment a = LauncherStart("mpirun");
    a.mutable_launch_nodes(1)->set_workdir(workdir);
    absl::StatusOr<LauncherPlan> plan = PlanLauncher(
        Launcher::kMpirun, a, LauncherNode(), Settings(), kAttempt);
    ASSERT_FALSE(plan.ok()) << workdir;
    EXPECT_NE(plan.status().message().find("launch_nodes[1].workdir"),
              std::string::npos)
        << plan.status();
  }
  v1::Assignment a = LauncherStart("mpirun");
  a.mutable_launch_nodes(0)->set_address("fe80::1");
  EXPECT_FALSE(
      PlanLauncher(Launcher::kMpirun, a, LauncherNode(), Settings(), kAttempt)
          .ok());
  NodeContext node = LauncherNode();
  node.worker_path = "/opt/my worker";
  absl::StatusOr<LauncherPlan> plan = PlanLauncher(
      Launcher::kMpirun, LauncherStart("mpirun"), node, Settings(), kAttempt);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("command line"), std::string::npos);
}

TEST(ClassifyLauncherExit, ScancelledSrunStepIsCancelledNotFailed) {
  const std::string slurmstepd =
      "slurmstepd: error: *** STEP 1234.3 ON node-a CANCELLED AT "
      "2026-12-03T17:00:00 ***\n";
  LauncherEnd end = ClassifyLauncherExit(
      Launcher::kSrun, ExitStatus{128 + SIGTERM, 0}, slurmstepd, false);
  EXPECT_FALSE(end.cancelled.empty());
  EXPECT_TRUE(end.error.empty());
  end = ClassifyLauncherExit(Launcher::kSrun, ExitStatus{-1, SIGKILL},
                             slurmstepd, false);
  EXPECT_FALSE(end.cancelled.empty());
}

TEST(ClassifyLauncherExit, OurCancelOrAFailingRankIsNoSchedulerCancel) {
  const std::string slurmstepd =
      "slurmstepd: error: *** STEP 1234.3 ON node-a CANCELLED AT x ***\n";
  // We asked: our own cancel.
  EXPECT_TRUE(ClassifyLauncherExit(Launcher::kSrun,
                                   ExitStatus{128 + SIGTERM, 0}, slurmstepd,
                                   true)
                  .cancelled.empty());
  // A rank that failed by itself.
  LauncherEnd end =
      ClassifyLauncherExit(Launcher::kSrun, ExitStatus{1, 0},
                           "srun: error: task 1: Exited\n", false);
  EXPECT_TRUE(end.cancelled.empty());
  EXPECT_EQ(end.error, "srun exited with code 1");
  // Killed by a signal without slurmstepd's line: not Slurm's cancel.
  EXPECT_TRUE(ClassifyLauncherExit(Launcher::kSrun,
                                   ExitStatus{128 + SIGKILL, 0}, "", false)
                  .cancelled.empty());
  // mpirun is never cancelled by a scheduler.
  end = ClassifyLauncherExit(Launcher::kMpirun, ExitStatus{-1, SIGTERM},
                             slurmstepd, false);
  EXPECT_TRUE(end.cancelled.empty());
  EXPECT_EQ(end.error, "mpirun killed by signal 15");
  EXPECT_TRUE(
      ClassifyLauncherExit(Launcher::kMpirun, ExitStatus{0, 0}, "", false)
          .error.empty());
}

TEST(ClassifyLauncherExit, UnknownStatusOfAReattachedSrunStillTellsAScancel) {
  EXPECT_FALSE(ClassifyLauncherExit(Launcher::kSrun, std::nullopt,
                                    "*** STEP 1.2 ON a CANCELLED AT x ***\n",
                                    false)
                   .cancelled.empty());
  const LauncherEnd end =
      ClassifyLauncherExit(Launcher::kMpirun, std::nullopt, "", false);
  EXPECT_TRUE(end.cancelled.empty());
  EXPECT_TRUE(end.error.empty()) << "unknown, not a failure: " << end.error;
}

TEST(LauncherFiles, EndAndFollowedRanksReadBackAsWritten) {
  LauncherEnd cancelled;
  cancelled.cancelled = "the Slurm step was cancelled (scancel)";
  absl::StatusOr<LauncherEnd> end =
      ParseLauncherEnd(FormatLauncherEnd(cancelled));
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->cancelled, cancelled.cancelled);
  LauncherEnd failed;
  failed.error = "mpirun exited with code 1";
  end = ParseLauncherEnd(FormatLauncherEnd(failed) + "\n");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->error, failed.error);
  EXPECT_TRUE(ParseLauncherEnd("ok").ok());
  EXPECT_FALSE(ParseLauncherEnd("maybe").ok());

  absl::StatusOr<FollowedRanks> followed =
      ParseFollowedRanks(FormatFollowedRanks({Launcher::kSrun, {2, 3}}));
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(followed->launcher, Launcher::kSrun);
  EXPECT_EQ(followed->ranks, (std::vector<int>{2, 3}));
  for (const char* bad : {"", "srun", "agent 1", "srun -1", "mpirun x"}) {
    absl::StatusOr<FollowedRanks> parsed = ParseFollowedRanks(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("launcher.ranks"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace hpcai500::agent
