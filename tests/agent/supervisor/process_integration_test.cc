// Real processes: the Supervisor with the POSIX launcher and a fake worker
// executable (tests/agent/supervisor/fake_worker.cc).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "agent/launch/worker_env.h"
#include "agent/supervisor/supervisor.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

extern char** environ;

namespace hpcai500::agent {
namespace {

v1::Assignment Start(const std::string& mode) {
  v1::Assignment a;
  a.set_phase(v1::Assignment::PHASE_START);
  a.mutable_key()->set_run_id(3);
  a.mutable_key()->set_attempt(1);
  v1::RunSpec* spec = a.mutable_spec();
  spec->set_workload("image_classification");
  spec->set_config(mode);
  spec->set_device("cpu");
  spec->set_precision("fp32");
  spec->set_epochs(1);
  spec->set_batch_size(8);
  a.set_world_size(2);
  a.add_ranks(1);
  a.set_master_addr("127.0.0.1");
  a.set_master_port(29500);
  return a;
}

class ProcessIntegrationTest : public ::testing::Test {
 protected:
  ProcessIntegrationTest() { StartSupervisor({"PATH=/usr/bin:/bin"}); }

  // A fresh supervisor whose workers get `base_env`.
  void StartSupervisor(std::vector<std::string> base_env) {
    SupervisorOptions options;
    options.address = "127.0.0.1";
    options.node.workdir = dir_.path();
    options.node.checkpoint_root = dir_.path() + "/checkpoints";
    options.node.worker_path = AGENT_FAKE_WORKER;
    options.node.cpus = 2;
    options.node.base_env = std::move(base_env);
    options.kill_grace_ms = 500;
    supervisor_ = std::make_unique<Supervisor>(options, &processes_, &clock_);
  }

  std::string RankFile(const std::string& ext) {
    return dir_.path() + "/runs/3/attempt-1/rank-1" + ext;
  }

  // Polls until a WorkerExited arrives (or 10 s pass); collects everything.
  std::vector<v1::AgentMessage> PollUntilExit() {
    std::vector<v1::AgentMessage> all;
    const bool exited = WaitFor(
        [&] {
          for (v1::AgentMessage& m : supervisor_->Poll()) {
            all.push_back(std::move(m));
            if (all.back().has_worker_exited()) return true;
          }
          return false;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(50));
    if (!exited) ADD_FAILURE() << "no WorkerExited within 10 s";
    return all;
  }

  // The pid of the worker's child, read from its stdout (-1 after 10 s).
  pid_t WaitForChild() {
    pid_t child = -1;
    WaitFor(
        [&] {
          const std::string out = ReadFile(RankFile(".stdout"));
          const size_t at = out.find("child ");
          if (at == std::string::npos ||
              out.find('\n', at) == std::string::npos) {
            return false;
          }
          child = std::stoi(out.substr(at + 6));
          return true;
        },
        std::chrono::seconds(10), std::chrono::milliseconds(50));
    return child;
  }

  void ExpectGoneSoon(pid_t pid) {
    EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(pid); },
                        std::chrono::seconds(2), std::chrono::milliseconds(20)))
        << "process " << pid << " left behind";
  }

  void Cancel() {
    v1::Cancel cancel;
    *cancel.mutable_key() = Start("hang").key();
    cancel.set_reason("test");
    supervisor_->HandleCancel(cancel);
  }

  TempDir dir_;
  PosixProcessLauncher processes_;
  RealClock clock_;
  std::unique_ptr<Supervisor> supervisor_;
};

TEST_F(ProcessIntegrationTest, WorkerRunsInItsOwnSessionWithRankEnvironment) {
  ASSERT_TRUE(supervisor_->HandleAssignment(Start("hang")).empty());
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(".pid"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  pid_t child = WaitForChild();
  ASSERT_GT(child, 0);
  EXPECT_EQ(::getsid(pid->pid), pid->pid);
  EXPECT_EQ(::getpgid(child), pid->pid);
  EXPECT_NE(::getsid(0), pid->pid);
  EXPECT_TRUE(IsSameProcessRunning(*pid, processes_));
  EXPECT_NE(ReadFile(RankFile(".stdout"))
                .find("RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 "
                      "MASTER_PORT=29500"),
            std::string::npos);
  Cancel();
  std::vector<v1::AgentMessage> out = PollUntilExit();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().worker_exited().signal(), SIGTERM);
  ExpectGoneSoon(pid->pid);
  ExpectGoneSoon(child);
}

TEST_F(ProcessIntegrationTest, CancelKillsAWorkerThatIgnoresSigterm) {
  supervisor_->HandleAssignment(Start("stubborn"));
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(".pid"));
  ASSERT_TRUE(pid.ok());
  pid_t child = WaitForChild();
  ASSERT_GT(child, 0);
  Cancel();
  std::vector<v1::AgentMessage> out = PollUntilExit();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().worker_exited().signal(), SIGKILL);
  ExpectGoneSoon(pid->pid);
  ExpectGoneSoon(child);
}

TEST_F(ProcessIntegrationTest, ExitCodeAndStderrAreReported) {
  supervisor_->HandleAssignment(Start("fail"));
  std::vector<v1::AgentMessage> out = PollUntilExit();
  ASSERT_FALSE(out.empty());
  const v1::WorkerExited& exited = out.back().worker_exited();
  EXPECT_EQ(exited.exit_code(), 3);
  EXPECT_EQ(exited.signal(), 0);
  EXPECT_NE(exited.stderr_tail().find("failed on purpose"), std::string::npos);
  EXPECT_NE(ReadFile(RankFile(".stderr")).find("failed on purpose"),
            std::string::npos);
  absl::StatusOr<ExitRecord> recorded = ReadExitFile(RankFile(".exit"));
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(recorded->status.exit_code, 3);
}

TEST_F(ProcessIntegrationTest, EventsArriveBeforeTheExit) {
  supervisor_->HandleAssignment(Start("succeed"));
  std::vector<v1::AgentMessage> out = PollUntilExit();
  std::vector<int64_t> seqs;
  for (const v1::AgentMessage& m : out) {
    for (const v1::Event& e : m.events().events()) {
      EXPECT_EQ(e.rank(), 1);
      seqs.push_back(e.seq());
    }
  }
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2}));
  ASSERT_TRUE(out.back().has_worker_exited());
  EXPECT_EQ(out.back().worker_exited().exit_code(), 0);
}

TEST_F(ProcessIntegrationTest, WorkerSeesTheAllowlistedEnvironmentOnly) {
  ::setenv("AWS_SECRET_ACCESS_KEY", "hunter2", /*overwrite=*/1);
  ::setenv("NCCL_DEBUG", "INFO", 1);
  ::setenv("SITE_LICENSE", "abc", 1);
  std::vector<std::string> agent_env;
  for (char** e = environ; *e != nullptr; ++e) agent_env.push_back(*e);
  // Taken: gone again before any assertion can end the test.
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("NCCL_DEBUG");
  ::unsetenv("SITE_LICENSE");
  StartSupervisor(WorkerBaseEnv(agent_env, {"SITE_LICENSE"}, "lo"));
  supervisor_->HandleAssignment(Start("environment"));
  std::vector<v1::AgentMessage> out = PollUntilExit();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().worker_exited().exit_code(), 0);
  const std::string seen = ReadFile(RankFile(".stdout"));
  for (const char* line :
       {"ENV NCCL_DEBUG=INFO\n", "ENV SITE_LICENSE=abc\n",
        "ENV GLOO_SOCKET_IFNAME=lo\n", "ENV NCCL_SOCKET_IFNAME=lo\n",
        "ENV RANK=1\n", "ENV MASTER_ADDR=127.0.0.1\n"}) {
    EXPECT_NE(seen.find(line), std::string::npos) << line << seen;
  }
  EXPECT_EQ(seen.find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("hunter2"), std::string::npos) << seen;
}

TEST_F(ProcessIntegrationTest, FindByArgumentsFindsProcessesByAnExactArgument) {
  // A unique argument of this test's process: a sleep of 600.PID seconds.
  const std::string unique = "600." + std::to_string(::getpid());
  LaunchSpec spec;
  spec.argv = {"/bin/sleep", unique};
  spec.stdout_path = dir_.path() + "/out";
  spec.stderr_path = dir_.path() + "/err";
  absl::StatusOr<pid_t> pid = processes_.Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::map<std::string, pid_t> found;
  // One look at every process for all three: the argument found, argv[0]
  // and a prefix of the argument not.
  EXPECT_TRUE(WaitFor(
      [&] {
        found = processes_.FindByArguments(
            {unique, "/bin/sleep", unique.substr(0, unique.size() - 1)});
        return found.count(unique) > 0;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(20)));
  EXPECT_EQ(found, (std::map<std::string, pid_t>{{unique, *pid}}));
  processes_.SignalGroup(*pid, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return processes_.TryWait(*pid).has_value(); },
                      std::chrono::seconds(10), std::chrono::milliseconds(20)));
  EXPECT_TRUE(processes_.FindByArguments({unique}).empty());
}

TEST_F(ProcessIntegrationTest, MissingWorkerBinaryIsAStartError) {
  LaunchSpec spec;
  spec.argv = {dir_.path() + "/no-such-worker"};
  spec.stdout_path = dir_.path() + "/out";
  spec.stderr_path = dir_.path() + "/err";
  absl::StatusOr<pid_t> pid = processes_.Launch(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("no-such-worker"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500::agent
