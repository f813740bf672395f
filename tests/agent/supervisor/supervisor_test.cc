// The Supervisor with fake processes and a fake clock: starts, refusals,
// events and exits delivered and acknowledged, checkpoints, cancels,
// fencing, reattach; and BatchEvents.
#include "agent/supervisor/supervisor.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/system/files.h"
#include "common/worker_lease.h"
#include "gtest/gtest.h"
#include "tests/agent/fakes.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

v1::Assignment Start(int64_t run, std::vector<int> ranks, int world) {
  return SmokeStart(run, ranks, world);
}

std::vector<int64_t> EventSeqs(const std::vector<v1::AgentMessage>& messages) {
  std::vector<int64_t> seqs;
  for (const v1::AgentMessage& m : messages) {
    for (const v1::Event& e : m.events().events()) seqs.push_back(e.seq());
  }
  return seqs;
}

v1::Acks EventAck(const v1::AttemptKey& key, int rank, int64_t seq) {
  v1::Acks acks;
  v1::Ack* ack = acks.add_acks();
  *ack->mutable_key() = key;
  ack->set_rank(rank);
  ack->set_seq(seq);
  return acks;
}

v1::Acks ExitAck(const v1::AttemptKey& key, int rank) {
  v1::Acks acks;
  v1::ExitAck* ack = acks.add_exits();
  *ack->mutable_key() = key;
  ack->set_rank(rank);
  return acks;
}

// Attempt 2 of run `run`, resuming from attempt 1's checkpoint of `epoch`.
v1::Assignment Resume(int64_t run, int epoch) {
  v1::Assignment a = Start(run, {0}, 1);
  a.mutable_key()->set_attempt(2);
  a.mutable_spec()->set_epochs(3);
  a.set_resume_from_attempt(1);
  a.set_resume_from_epoch(epoch);
  return a;
}

bool Has(const std::vector<std::string>& argv, const std::string& arg) {
  return std::find(argv.begin(), argv.end(), arg) != argv.end();
}

bool CanBind(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorOptions Options() {
    SupervisorOptions options;
    options.address = "127.0.0.1";
    options.node.workdir = dir_.path();
    options.node.worker_path = "/opt/hpcai500-worker";
    options.node.cpus = 4;
    options.node.checkpoint_root = dir_.path() + "/ckpt";
    options.kill_grace_ms = 10000;
    return options;
  }
  std::string CheckpointDir(int64_t run, int attempt) {
    return dir_.path() + "/ckpt/run-" + std::to_string(run) + "/attempt-" +
           std::to_string(attempt);
  }
  std::unique_ptr<Supervisor> Make() {
    return std::make_unique<Supervisor>(Options(), &processes_, &clock_);
  }
  std::string RankFile(int64_t run, int rank, const std::string& ext) {
    return dir_.path() + "/runs/" + std::to_string(run) + "/attempt-1/rank-" +
           std::to_string(rank) + ext;
  }

  TempDir dir_;
  FakeProcessLauncher processes_;
  FakeClock clock_;
};

TEST_F(SupervisorTest, StartsOneWorkerPerLocalRankAndRecordsPids) {
  auto supervisor = Make();
  EXPECT_TRUE(supervisor->HandleAssignment(Start(5, {0, 1}, 2)).empty());
  ASSERT_EQ(processes_.launches.size(), 2u);
  EXPECT_EQ(processes_.launches[1].argv[0], "/opt/hpcai500-worker");
  absl::StatusOr<PidRecord> pid = ReadPidFile(RankFile(5, 1, ".pid"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(pid->pid, 101);
  EXPECT_EQ(pid->start_time, 5101u);
  ASSERT_EQ(supervisor->Running().size(), 1u);
  EXPECT_EQ(supervisor->Running()[0].ranks_size(), 2);
}

TEST_F(SupervisorTest, GrantsTheAttemptsLeaseAndNamesItToItsWorkers) {
  WorkerLeases leases(dir_.path());
  leases.set_deadline_ms(1'060'000);
  SupervisorOptions options = Options();
  options.leases = &leases;
  Supervisor supervisor(options, &processes_, &clock_);
  EXPECT_TRUE(supervisor.HandleAssignment(Start(5, {0, 1}, 2)).empty());
  const std::string lease = dir_.path() + "/runs/5/attempt-1/lease";
  EXPECT_EQ(ReadLeaseFile(lease), 1'060'000);
  ASSERT_EQ(processes_.launches.size(), 2u);
  for (const LaunchSpec& launch : processes_.launches) {
    auto flag =
        std::find(launch.argv.begin(), launch.argv.end(), "--lease-file");
    ASSERT_NE(flag, launch.argv.end());
    ASSERT_NE(flag + 1, launch.argv.end());
    EXPECT_EQ(*(flag + 1), lease);
  }
}

TEST_F(SupervisorTest, BadAssignmentIsAnsweredWithoutLaunching) {
  auto supervisor = Make();
  v1::Assignment bad = Start(5, {0, 1}, 2);
  bad.mutable_spec()->set_workload("../../bin/sh");
  std::vector<v1::WorkerExited> exits =
      Exits(supervisor->HandleAssignment(bad));
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_NE(exits[0].error().find("spec.workload"), std::string::npos);
  EXPECT_EQ(exits[1].rank(), 1);
  EXPECT_TRUE(processes_.launches.empty());
  EXPECT_EQ(supervisor->attempt_count(), 0u);
}

TEST_F(SupervisorTest, ARefusalIsSentAgainAfterABrokenStreamUntilAcked) {
  auto supervisor = Make();
  v1::Assignment bad = Start(5, {0, 1}, 2);
  bad.mutable_spec()->set_workload("../../bin/sh");
  ASSERT_EQ(Exits(supervisor->HandleAssignment(bad)).size(), 2u);
  // The stream broke before the coordinator stored them: the Register
  // lists both ranks as exited, and the refusals follow it.
  std::vector<v1::RunningAttempt> running = supervisor->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].key().run_id(), 5);
  EXPECT_EQ(running[0].ranks_size(), 0);
  EXPECT_EQ(running[0].exited_ranks_size(), 2);
  std::vector<v1::WorkerExited> again = Exits(supervisor->Resend());
  ASSERT_EQ(again.size(), 2u);
  EXPECT_NE(again[0].error().find("spec.workload"), std::string::npos);
  // Acknowledged: nothing more to send or list.
  v1::Acks acks;
  for (int rank : {0, 1}) {
    v1::ExitAck* ack = acks.add_exits();
    *ack->mutable_key() = bad.key();
    ack->set_rank(rank);
  }
  supervisor->HandleAcks(acks);
  EXPECT_TRUE(supervisor->Running().empty());
  EXPECT_TRUE(Exits(supervisor->Resend()).empty());
}

TEST_F(SupervisorTest, FailedLaunchIsReportedWithItsError) {
  auto supervisor = Make();
  processes_.fail_launch = true;
  std::vector<v1::WorkerExited> exits =
      Exits(supervisor->HandleAssignment(Start(5, {0}, 1)));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_NE(exits[0].error().find("cannot start"), std::string::npos);
}

TEST_F(SupervisorTest, ExitIsReportedAfterTheRemainingEvents) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(RankFile(5, 0, ".events"),
               EventLineText(1, 0) + EventLineText(2, 0));
  EXPECT_EQ(EventSeqs(supervisor->Poll()), (std::vector<int64_t>{1, 2}));
  AppendToFile(RankFile(5, 0, ".events"), EventLineText(3, 0));
  AppendToFile(RankFile(5, 0, ".stderr"), "boom: bad thing\n");
  processes_.exits[100] = ExitStatus{3, 0};

  std::vector<v1::AgentMessage> out = supervisor->Poll();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(EventSeqs({out[0]}), (std::vector<int64_t>{3}));
  ASSERT_TRUE(out[1].has_worker_exited());
  EXPECT_EQ(out[1].worker_exited().exit_code(), 3);
  EXPECT_EQ(out[1].worker_exited().stderr_tail(), "boom: bad thing\n");
  ASSERT_EQ(supervisor->Running().size(), 1u);
  EXPECT_EQ(supervisor->Running()[0].ranks_size(), 0);  // exited, not acked
  EXPECT_TRUE(Exits(supervisor->Poll()).empty());       // reported once

  // Kept until acknowledged, then forgotten and marked done.
  EXPECT_EQ(supervisor->attempt_count(), 1u);
  supervisor->HandleAcks(EventAck(Start(5, {0}, 1).key(), 0, 3));
  supervisor->HandleAcks(ExitAck(Start(5, {0}, 1).key(), 0));
  supervisor->Poll();
  EXPECT_EQ(supervisor->attempt_count(), 0u);
  EXPECT_TRUE(FileExists(RankFile(5, 0, ".done")));
}

TEST_F(SupervisorTest, RankIsDoneOnlyOnceItsExitIsAcknowledged) {
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(RankFile(5, 0, ".events"), EventLineText(1, 0));
  processes_.exits[100] = ExitStatus{0, 0};
  ASSERT_EQ(Exits(supervisor->Poll()).size(), 1u);
  supervisor->HandleAcks(EventAck(key, 0, 1));
  supervisor->Poll();
  // Every event is acknowledged, the exit is not: kept and sent again.
  EXPECT_FALSE(FileExists(RankFile(5, 0, ".done")));
  EXPECT_EQ(supervisor->attempt_count(), 1u);
  EXPECT_EQ(Exits(supervisor->Resend()).size(), 1u);

  supervisor->HandleAcks(ExitAck(Start(6, {0}, 1).key(), 0));  // another run
  supervisor->Poll();
  EXPECT_FALSE(FileExists(RankFile(5, 0, ".done")));

  supervisor->HandleAcks(ExitAck(key, 0));
  EXPECT_TRUE(Exits(supervisor->Resend()).empty());  // stored: not resent
  supervisor->Poll();
  EXPECT_TRUE(FileExists(RankFile(5, 0, ".done")));
  EXPECT_EQ(supervisor->attempt_count(), 0u);
}

TEST_F(SupervisorTest, AcknowledgedExitWaitsForTheEventAcks) {
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(RankFile(5, 0, ".events"),
               EventLineText(1, 0) + EventLineText(2, 0));
  processes_.exits[100] = ExitStatus{0, 0};
  supervisor->Poll();
  supervisor->HandleAcks(ExitAck(key, 0));
  supervisor->HandleAcks(EventAck(key, 0, 1));
  supervisor->Poll();
  EXPECT_FALSE(FileExists(RankFile(5, 0, ".done")));
  EXPECT_EQ(EventSeqs(supervisor->Resend()), (std::vector<int64_t>{2}));
  supervisor->HandleAcks(EventAck(key, 0, 2));
  supervisor->Poll();
  EXPECT_TRUE(FileExists(RankFile(5, 0, ".done")));
}

TEST_F(SupervisorTest, RunningListsRunningRanksApartFromUnacknowledgedExits) {
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0, 1}, 2));
  processes_.exits[100] = ExitStatus{0, 0};  // rank 0 ends first
  supervisor->Poll();
  std::vector<v1::RunningAttempt> running = supervisor->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(
      std::vector<int>(running[0].ranks().begin(), running[0].ranks().end()),
      (std::vector<int>{1}));
  EXPECT_EQ(std::vector<int>(running[0].exited_ranks().begin(),
                             running[0].exited_ranks().end()),
            (std::vector<int>{0}));

  supervisor->HandleAcks(ExitAck(key, 0));
  supervisor->Poll();
  running = supervisor->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].ranks_size(), 1);
  EXPECT_EQ(running[0].exited_ranks_size(), 0);  // rank 0 is done

  processes_.exits[101] = ExitStatus{0, 0};
  supervisor->Poll();
  running = supervisor->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].ranks_size(), 0);
  EXPECT_EQ(running[0].exited_ranks_size(), 1);
}

TEST_F(SupervisorTest, ReattachReportsAnUnacknowledgedExitAgain) {
  const v1::AttemptKey key = Start(8, {0}, 1).key();
  {
    auto before = Make();
    before->HandleAssignment(Start(8, {0}, 1));
    processes_.exits[100] = ExitStatus{2, 0};
    ASSERT_EQ(Exits(before->Poll()).size(), 1u);
  }  // the agent goes away before the coordinator acknowledged the exit
  auto after = Make();
  EXPECT_EQ(after->Reattach(), 1);
  std::vector<v1::RunningAttempt> running = after->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].ranks_size(), 0);
  ASSERT_EQ(running[0].exited_ranks_size(), 1);
  EXPECT_EQ(running[0].exited_ranks(0), 0);
  std::vector<v1::WorkerExited> exits = Exits(after->Resend());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code(), 2);

  after->HandleAcks(ExitAck(key, 0));
  after->Poll();
  EXPECT_TRUE(FileExists(RankFile(8, 0, ".done")));
  EXPECT_EQ(after->attempt_count(), 0u);
}

TEST_F(SupervisorTest, EveryAttemptGetsACheckpointFolder) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  ASSERT_EQ(processes_.launches.size(), 1u);
  const std::vector<std::string>& argv = processes_.launches[0].argv;
  auto flag = std::find(argv.begin(), argv.end(), "--checkpoint-dir");
  ASSERT_NE(flag, argv.end());
  ASSERT_NE(flag + 1, argv.end());
  EXPECT_EQ(*(flag + 1), CheckpointDir(5, 1));
  EXPECT_TRUE(std::filesystem::is_directory(CheckpointDir(5, 1)));
  EXPECT_FALSE(Has(argv, "--resume"));
}

TEST_F(SupervisorTest, ResumedStartLinksTheSourceCheckpointIntoItsFolder) {
  const std::string source =
      CheckpointDir(5, 1) + "/checkpoint-epoch-000002.pt";
  ASSERT_TRUE(MakeDirectories(CheckpointDir(5, 1)).ok());
  AppendToFile(source, "epoch 2 weights");
  auto supervisor = Make();
  EXPECT_TRUE(supervisor->HandleAssignment(Resume(5, 2)).empty());
  const std::string linked =
      CheckpointDir(5, 2) + "/checkpoint-epoch-000002.pt";
  ASSERT_TRUE(FileExists(linked));
  EXPECT_EQ(ReadFile(linked), "epoch 2 weights");
  EXPECT_EQ(Inode(linked), Inode(source));  // a link, not a copy
  ASSERT_EQ(processes_.launches.size(), 1u);
  EXPECT_TRUE(Has(processes_.launches[0].argv, "--resume"));
  EXPECT_TRUE(Has(processes_.launches[0].argv, CheckpointDir(5, 2)));
}

TEST_F(SupervisorTest, MissingResumeSourceStillStarts) {
  auto supervisor = Make();
  EXPECT_TRUE(supervisor->HandleAssignment(Resume(5, 2)).empty());
  ASSERT_EQ(processes_.launches.size(), 1u);
  EXPECT_TRUE(Has(processes_.launches[0].argv, "--resume"));
  EXPECT_TRUE(std::filesystem::is_directory(CheckpointDir(5, 2)));
  EXPECT_TRUE(std::filesystem::is_empty(CheckpointDir(5, 2)));
  EXPECT_EQ(supervisor->Running().size(), 1u);
}

TEST_F(SupervisorTest, RankZeroSuccessRemovesTheRunsCheckpointsOnceDelivered) {
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0, 1}, 2));
  AppendToFile(CheckpointDir(5, 1) + "/checkpoint-epoch-000001.pt", "w");
  std::filesystem::create_directories(CheckpointDir(5, 9));  // another attempt
  std::filesystem::create_directories(CheckpointDir(6, 1));  // another run
  processes_.exits[100] = ExitStatus{0, 0};
  processes_.exits[101] = ExitStatus{0, 0};
  supervisor->Poll();
  EXPECT_TRUE(std::filesystem::exists(CheckpointDir(5, 1)));  // not acked
  supervisor->HandleAcks(ExitAck(key, 1));
  supervisor->Poll();
  EXPECT_TRUE(std::filesystem::exists(CheckpointDir(5, 1)));  // rank 1 only
  supervisor->HandleAcks(ExitAck(key, 0));
  supervisor->Poll();
  EXPECT_FALSE(std::filesystem::exists(CheckpointDir(5, 1)));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/ckpt/run-5"));
  EXPECT_TRUE(std::filesystem::exists(CheckpointDir(6, 1)));
}

TEST_F(SupervisorTest, FailedAttemptKeepsItsCheckpointsForAResume) {
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(CheckpointDir(5, 1) + "/checkpoint-epoch-000001.pt", "w");
  processes_.exits[100] = ExitStatus{-1, SIGKILL};
  supervisor->Poll();
  supervisor->HandleAcks(ExitAck(key, 0));
  supervisor->Poll();
  EXPECT_TRUE(FileExists(RankFile(5, 0, ".done")));
  EXPECT_TRUE(FileExists(CheckpointDir(5, 1) + "/checkpoint-epoch-000001.pt"));
}

TEST_F(SupervisorTest, FenceAllStopsEveryRunningAttemptOnce) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start(5, {0, 1}, 2));  // pids 100, 101
  supervisor->HandleAssignment(Start(6, {0}, 1));     // pid 102
  supervisor->HandleAssignment(Start(7, {0}, 1));     // pid 103, ends
  processes_.exits[103] = ExitStatus{0, 0};
  supervisor->Poll();
  v1::Assignment reserve;
  reserve.set_phase(v1::Assignment::PHASE_RESERVE);
  *reserve.mutable_key() = Start(9, {0}, 1).key();
  std::vector<v1::AgentMessage> reserved =
      supervisor->HandleAssignment(reserve);
  ASSERT_EQ(reserved.size(), 1u);
  const int port = reserved[0].port_reserved().port();
  ASSERT_FALSE(CanBind(port));
  processes_.signals.clear();  // run 7's group, killed when it was reaped

  EXPECT_EQ(supervisor->FenceAll("self-fenced: test"), 2);
  EXPECT_EQ(processes_.signals,
            (std::vector<std::pair<pid_t, int>>{
                {100, SIGTERM}, {101, SIGTERM}, {102, SIGTERM}}));
  EXPECT_TRUE(CanBind(port));  // the reservation is given up too
  EXPECT_EQ(supervisor->FenceAll("self-fenced: test"), 0);  // once
  EXPECT_EQ(processes_.signals.size(), 3u);

  processes_.signals.clear();
  clock_.now_ms += 10000;  // nobody obeyed for the whole grace
  supervisor->Poll();
  EXPECT_EQ(processes_.signals,
            (std::vector<std::pair<pid_t, int>>{
                {100, SIGKILL}, {101, SIGKILL}, {102, SIGKILL}}));
  // Their exits are reported as usual.
  processes_.exits[100] = ExitStatus{-1, SIGKILL};
  processes_.exits[101] = ExitStatus{-1, SIGKILL};
  processes_.exits[102] = ExitStatus{-1, SIGKILL};
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[2].key().run_id(), 6);
  EXPECT_EQ(exits[2].signal(), SIGKILL);
}

TEST_F(SupervisorTest, FencedWorkerOfAnEarlierAgentIsReportedAsStopped) {
  {
    auto before = Make();
    before->HandleAssignment(Start(8, {0}, 1));
  }
  auto after = Make();
  ASSERT_EQ(after->Reattach(), 1);
  EXPECT_EQ(after->FenceAll("self-fenced: test"), 1);
  EXPECT_EQ(processes_.signals,
            (std::vector<std::pair<pid_t, int>>{{100, SIGTERM}}));
  processes_.start_times.clear();  // it obeyed
  std::vector<v1::WorkerExited> exits = Exits(after->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code(), -1);
  EXPECT_EQ(exits[0].error(),
            "stopped by the agent; exit status unknown (not its child)");
}

TEST_F(SupervisorTest, FenceAllWithNothingRunningStopsNothing) {
  auto supervisor = Make();
  EXPECT_EQ(supervisor->FenceAll("self-fenced: test"), 0);
  EXPECT_TRUE(processes_.signals.empty());
}

TEST_F(SupervisorTest, ResendCarriesUnackedEventsThenReportedExits) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(RankFile(5, 0, ".events"),
               EventLineText(1, 0) + EventLineText(2, 0) + EventLineText(3, 0));
  supervisor->Poll();
  v1::Acks acks;
  v1::Ack* ack = acks.add_acks();
  *ack->mutable_key() = Start(5, {0}, 1).key();
  ack->set_seq(1);
  supervisor->HandleAcks(acks);
  processes_.exits[100] = ExitStatus{0, 0};
  supervisor->Poll();

  std::vector<v1::AgentMessage> resend = supervisor->Resend();
  EXPECT_EQ(EventSeqs(resend), (std::vector<int64_t>{2, 3}));
  ASSERT_TRUE(resend.back().has_worker_exited());
  EXPECT_EQ(resend.back().worker_exited().exit_code(), 0);
}

TEST_F(SupervisorTest, UnacknowledgedEventsAndExitsAreSentAgainWithBackOff) {
  // The coordinator could not store them (a full disk): no acknowledgement
  // comes, and the stream stays up, so no reconnect resends them.
  auto supervisor = Make();
  const v1::AttemptKey key = Start(5, {0}, 1).key();
  supervisor->HandleAssignment(Start(5, {0}, 1));
  AppendToFile(RankFile(5, 0, ".events"),
               EventLineText(1, 0) + EventLineText(2, 0));
  EXPECT_EQ(EventSeqs(supervisor->Poll()), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(supervisor->ResendOverdue().empty());  // the wait starts
  clock_.now_ms += ResendClock::kFirstResendMs - 1;
  EXPECT_TRUE(supervisor->ResendOverdue().empty());
  clock_.now_ms += 1;
  EXPECT_EQ(EventSeqs(supervisor->ResendOverdue()),
            (std::vector<int64_t>{1, 2}));
  // Then after twice as long.
  clock_.now_ms += ResendClock::kFirstResendMs;
  EXPECT_TRUE(supervisor->ResendOverdue().empty());
  clock_.now_ms += ResendClock::kFirstResendMs;
  EXPECT_EQ(EventSeqs(supervisor->ResendOverdue()),
            (std::vector<int64_t>{1, 2}));

  // The worker ends: its exit carries the last seq it wrote, and waits for
  // its acknowledgement like the events.
  processes_.exits[100] = ExitStatus{0, 0};
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].last_seq(), 2);
  // An acknowledgement is progress: the wait starts over from the first.
  supervisor->HandleAcks(EventAck(key, 0, 2));
  clock_.now_ms += ResendClock::kFirstResendMs - 1;
  EXPECT_TRUE(supervisor->ResendOverdue().empty());
  clock_.now_ms += 1;
  std::vector<v1::AgentMessage> again = supervisor->ResendOverdue();
  EXPECT_TRUE(EventSeqs(again).empty());
  EXPECT_EQ(Exits(again).size(), 1u);

  // Everything acknowledged: nothing waits, nothing is sent.
  supervisor->HandleAcks(ExitAck(key, 0));
  supervisor->Poll();
  clock_.now_ms += ResendClock::kMaxResendMs;
  EXPECT_TRUE(supervisor->ResendOverdue().empty());
}

TEST_F(SupervisorTest, CancelSendsSigtermThenSigkillAfterTheGrace) {
  auto supervisor = Make();
  supervisor->HandleAssignment(Start(5, {0, 1}, 2));
  v1::Cancel cancel;
  *cancel.mutable_key() = Start(5, {0}, 1).key();
  cancel.set_reason("user");
  supervisor->HandleCancel(cancel);
  EXPECT_EQ(processes_.signals, (std::vector<std::pair<pid_t, int>>{
                                    {100, SIGTERM}, {101, SIGTERM}}));
  processes_.exits[100] = ExitStatus{-1, SIGTERM};  // rank 0 obeys
  clock_.now_ms += 9000;
  std::vector<v1::WorkerExited> exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal(), SIGTERM);
  processes_.signals.clear();
  clock_.now_ms += 1000;  // rank 1 ignored SIGTERM for the whole grace
  supervisor->Poll();
  EXPECT_EQ(processes_.signals,
            (std::vector<std::pair<pid_t, int>>{{101, SIGKILL}}));
  processes_.exits[101] = ExitStatus{-1, SIGKILL};
  exits = Exits(supervisor->Poll());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].rank(), 1);
  EXPECT_EQ(exits[0].signal(), SIGKILL);
}

TEST_F(SupervisorTest, ReservedPortStaysTakenUntilTheStart) {
  auto supervisor = Make();
  v1::Assignment reserve;
  reserve.set_phase(v1::Assignment::PHASE_RESERVE);
  *reserve.mutable_key() = Start(5, {0}, 1).key();
  std::vector<v1::AgentMessage> out = supervisor->HandleAssignment(reserve);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].has_port_reserved());
  const v1::PortReserved& reserved = out[0].port_reserved();
  EXPECT_EQ(reserved.error(), "");
  EXPECT_EQ(reserved.host(), "127.0.0.1");
  ASSERT_GT(reserved.port(), 0);
  EXPECT_FALSE(CanBind(reserved.port()));

  v1::Assignment start = Start(5, {0}, 1);
  start.set_master_port(reserved.port());
  supervisor->HandleAssignment(start);
  EXPECT_TRUE(CanBind(reserved.port()));
}

TEST_F(SupervisorTest, ReattachFollowsALiveWorkerAndDerivesItsOutcome) {
  {
    auto before = Make();
    before->HandleAssignment(Start(8, {0, 1}, 2));
    AppendToFile(RankFile(8, 0, ".events"), EventLineText(1, 0));
    before->Poll();
    before->HandleAcks(EventAck(Start(8, {0}, 1).key(), 0, 1));
  }  // the agent goes away; workers 100 and 101 keep running
  auto after = Make();
  EXPECT_EQ(after->Reattach(), 2);
  std::vector<v1::RunningAttempt> running = after->Running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].key().run_id(), 8);
  EXPECT_EQ(running[0].ranks_size(), 2);
  EXPECT_EQ(running[0].exited_ranks_size(), 0);

  AppendToFile(
      RankFile(8, 0, ".events"),
      EventLineText(2, 0) +
          EventLineText(3, 0, "run_stop", ", \"status\": \"success\""));
  std::vector<v1::AgentMessage> out = after->Poll();
  EXPECT_EQ(EventSeqs(out), (std::vector<int64_t>{2, 3}));  // 1 was acked
  EXPECT_TRUE(Exits(out).empty());

  // Both end while the agent is not their parent: rank 0 wrote run_stop,
  // rank 1 wrote nothing.
  processes_.start_times.clear();
  std::vector<v1::WorkerExited> exits = Exits(after->Poll());
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0].rank(), 0);
  EXPECT_EQ(exits[0].exit_code(), 0);
  EXPECT_EQ(exits[1].rank(), 1);
  EXPECT_EQ(exits[1].exit_code(), -1);
  EXPECT_EQ(exits[1].error(), "worker lost while the agent was down");
}

TEST_F(SupervisorTest, ReattachIgnoresAReusedPid) {
  {
    auto before = Make();
    before->HandleAssignment(Start(8, {0}, 1));
  }
  processes_.start_times[100] = 1;  // pid 100 now belongs to someone else
  auto after = Make();
  EXPECT_EQ(after->Reattach(), 1);
  EXPECT_EQ(Exits(after->Poll()).size(), 1u);
  EXPECT_TRUE(processes_.signals.empty());  // never signals a stranger
}

TEST_F(SupervisorTest, DeliveredAttemptsAreNotTakenUpAgain) {
  {
    auto before = Make();
    before->HandleAssignment(Start(8, {0}, 1));
    processes_.exits[100] = ExitStatus{0, 0};
    before->Poll();
    before->HandleAcks(ExitAck(Start(8, {0}, 1).key(), 0));
    before->Poll();
    EXPECT_EQ(before->attempt_count(), 0u);  // no events: nothing to ack
  }
  auto after = Make();
  EXPECT_EQ(after->Reattach(), 0);
}

TEST(BatchEvents, LimitsLinesPerMessage) {
  std::vector<v1::Event> events(kMaxBatchEvents * 2 + 1);
  for (size_t i = 0; i < events.size(); ++i) events[i].set_seq(i + 1);
  std::vector<v1::AgentMessage> batches = BatchEvents(events);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].events().events_size(),
            static_cast<int>(kMaxBatchEvents));
  EXPECT_EQ(batches[2].events().events(0).seq(),
            static_cast<int64_t>(kMaxBatchEvents * 2 + 1));
}

TEST(BatchEvents, LimitsBytesPerMessage) {
  std::vector<v1::Event> events(5);
  for (v1::Event& e : events) e.set_line(std::string(kMaxBatchBytes / 2, 'x'));
  EXPECT_EQ(BatchEvents(events).size(), 3u);
}

}  // namespace
}  // namespace hpcai500::agent
