#include "server/coordinator/coordinator.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/checkpoint_manifest.h"
#include "common/worker_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/coordinator/run_reads.h"
#include "server/http/router.h"
#include "tests/common/database_pages.h"
#include "tests/common/fake_clock.h"
#include "tests/common/test_files.h"
#include "tests/server/store/store_calls.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::FakeClock;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fake agent connection: records what the coordinator sends to one node.
class FakeAgent final : public AgentChannel {
 public:
  void Send(const v1::CoordinatorMessage& message) override {
    sent.push_back(message);
  }
  std::vector<v1::Assignment> Assignments(v1::Assignment::Phase phase) const {
    std::vector<v1::Assignment> out;
    for (const auto& m : sent) {
      if (m.has_assignment() && m.assignment().phase() == phase) {
        out.push_back(m.assignment());
      }
    }
    return out;
  }
  int Cancels() const {
    int n = 0;
    for (const auto& m : sent) n += m.has_cancel();
    return n;
  }
  // The last acknowledged seq of (run, attempt, rank), 0 when none.
  int64_t AckedSeq(int64_t run, int32_t attempt, int32_t rank) const {
    int64_t seq = 0;
    for (const auto& m : sent) {
      for (const v1::Ack& ack : m.acks().acks()) {
        if (ack.key().run_id() == run && ack.key().attempt() == attempt &&
            ack.rank() == rank) {
          seq = ack.seq();
        }
      }
    }
    return seq;
  }
  std::vector<v1::CoordinatorMessage> sent;
};

// What an agent lists in its Register: `key` with its running and exited
// ranks.
v1::RunningAttempt Running(const v1::AttemptKey& key,
                           std::vector<int32_t> ranks,
                           std::vector<int32_t> exited = {}) {
  v1::RunningAttempt running;
  *running.mutable_key() = key;
  running.mutable_ranks()->Add(ranks.begin(), ranks.end());
  running.mutable_exited_ranks()->Add(exited.begin(), exited.end());
  return running;
}

std::string SpecYaml(int nodes, int repetitions = 1,
                     const std::string& name = "smoke") {
  return absl::StrCat(
      "name: ", name,
      "\nworkload: image_classification\nconfig: fashion_mnist_smoke\n"
      "level: free\nnodes: ",
      nodes,
      "\nranks_per_node: 1\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
      "seed: 42\nsystem: test-box\nrepetitions: ",
      repetitions, "\n");
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_coordinator_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    OpenCoordinator();
  }
  void TearDown() override {
    reads_.reset();
    coordinator_.reset();
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::remove((dir_ + "/c.db" + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }
  void OpenCoordinator() {
    reads_.reset();
    coordinator_.reset();
    store_.reset();
    store_ = *Store::Open(dir_ + "/c.db");
    CoordinatorOptions options;
    options.node_timeout_ms = 60'000;
    options.exit_grace_ms = 5'000;
    options.queues = queues_;
    options.node_retention_ms = node_retention_ms_;
    auto created = Coordinator::Create(store_.get(), &clock_,
                                       &Registry::Builtin(), options);
    ASSERT_TRUE(created.ok()) << created.status();
    coordinator_ = *std::move(created);
    reads_ = std::make_unique<RunReads>(store_.get(), &Registry::Builtin(),
                                        coordinator_.get());
  }

  int64_t Register(const std::string& name, FakeAgent* agent,
                   std::vector<v1::RunningAttempt> running = {},
                   bool shared_checkpoints = false) {
    v1::Register request;
    request.set_name(name);
    request.set_address(name + ".local");
    request.set_slots(1);
    request.set_cpus(2);
    request.set_shared_checkpoints(shared_checkpoints);
    for (v1::RunningAttempt& attempt : running) {
      *request.add_running() = std::move(attempt);
    }
    absl::StatusOr<int64_t> session = coordinator_->Connect(request, agent);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.value_or(0);
  }

  void Send(int64_t session, const v1::AgentMessage& message) {
    absl::Status status = coordinator_->HandleAgentMessage(session, message);
    EXPECT_TRUE(status.ok()) << status;
  }

  void ReservePort(int64_t session, const v1::AttemptKey& key) {
    v1::AgentMessage message;
    *message.mutable_port_reserved()->mutable_key() = key;
    message.mutable_port_reserved()->set_host("10.0.0.1");
    message.mutable_port_reserved()->set_port(29500);
    Send(session, message);
  }

  void SendFixture(int64_t session, const v1::AttemptKey& key, int rank,
                   const std::string& file) {
    v1::AgentMessage message;
    int64_t seq = 0;
    for (const std::string& line : testing::FixtureLines("events/" + file)) {
      v1::Event* event = message.mutable_events()->add_events();
      *event->mutable_key() = key;
      event->set_rank(rank);
      event->set_seq(++seq);
      event->set_line(line);
    }
    ASSERT_GT(seq, 0) << "fixture " << file << " not found";
    Send(session, message);
  }

  void Exit(int64_t session, const v1::AttemptKey& key, int rank, int code,
            const std::string& stderr_tail = "") {
    v1::AgentMessage message;
    v1::WorkerExited* exit = message.mutable_worker_exited();
    *exit->mutable_key() = key;
    exit->set_rank(rank);
    exit->set_exit_code(code);
    exit->set_stderr_tail(stderr_tail);
    Send(session, message);
  }

  // Submits a 2-node run and drives it to RUNNING on agents a and b.
  v1::AttemptKey StartTwoNodeRun() {
    session_a_ = Register("a", &agent_a_);
    session_b_ = Register("b", &agent_b_);
    absl::StatusOr<v1::SubmitResponse> submitted =
        coordinator_->Submit(SpecYaml(2));
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    std::vector<v1::Assignment> reserve =
        agent_a_.Assignments(v1::Assignment::PHASE_RESERVE);
    EXPECT_EQ(reserve.size(), 1u);
    EXPECT_TRUE(agent_b_.Assignments(v1::Assignment::PHASE_RESERVE).empty());
    v1::AttemptKey key = reserve.empty() ? v1::AttemptKey() : reserve[0].key();
    ReservePort(session_a_, key);
    return key;
  }

  // A node with GPUs, labels and an inventory.
  int64_t RegisterNode(const std::string& name, FakeAgent* agent, int gpus,
                       std::map<std::string, std::string> labels) {
    v1::Register request;
    request.set_name(name);
    request.set_address(name + ".local");
    request.set_slots(std::max(1, gpus));
    request.set_gpus(gpus);
    request.mutable_labels()->insert(labels.begin(), labels.end());
    request.mutable_inventory()->set_cpu_model("Test CPU");
    for (int i = 0; i < gpus; ++i) {
      v1::Device* device = request.mutable_inventory()->add_devices();
      device->set_index(i);
      device->set_model("NVIDIA H200");
    }
    absl::StatusOr<int64_t> session = coordinator_->Connect(request, agent);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.value_or(0);
  }

  // The node as ListNodes shows it.
  v1::Node NodeNamed(const std::string& name) {
    const v1::ListNodesResponse nodes = *coordinator_->ListNodes();
    for (const v1::Node& node : nodes.nodes()) {
      if (node.name() == name) return node;
    }
    ADD_FAILURE() << "no node " << name;
    return v1::Node();
  }

  // Runs `sql` on the coordinator's database through a connection of its
  // own, as an operator's sqlite3 shell would.
  void ExecOnDatabase(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/c.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  // Caps the database at the pages it has now: the next write that grows
  // it fails as on a full disk (LimitPagesForTesting(1 << 30) lifts it).
  void FillTheDisk() {
    const int64_t pages = testing::DatabasePages(dir_ + "/c.db");
    ASSERT_GT(pages, 0);
    ASSERT_TRUE(store_->LimitPagesForTesting(pages).ok());
  }

  // The names ListNodes lists.
  std::vector<std::string> NodeNames() {
    std::vector<std::string> names;
    const v1::ListNodesResponse nodes = *coordinator_->ListNodes();
    for (const v1::Node& node : nodes.nodes()) {
      names.push_back(node.name());
    }
    return names;
  }

  // A Leaving from `session`'s agent, then its stream's end.
  void LeaveAndDisconnect(int64_t session, const std::string& reason) {
    v1::AgentMessage leaving;
    leaving.mutable_leaving()->set_reason(reason);
    Send(session, leaving);
    coordinator_->Disconnect(session);
  }

  std::vector<Scheduler::Queue> queues_;
  int64_t node_retention_ms_ = CoordinatorOptions().node_retention_ms;
  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<RunReads> reads_;  // the read side over coordinator_
  FakeAgent agent_a_;
  FakeAgent agent_b_;
  int64_t session_a_ = 0;
  int64_t session_b_ = 0;
};

TEST_F(CoordinatorTest, LauncherRunTellsRankZeroEveryNodeOfTheAttempt) {
  for (auto [name, agent] :
       {std::pair("a", &agent_a_), std::pair("b", &agent_b_)}) {
    v1::Register request;
    request.set_name(name);
    request.set_address(std::string(name) + ".local");
    request.set_slots(1);
    request.set_cpus(name == std::string("a") ? 4 : 8);
    request.set_workdir(std::string("/srv/agent-") + name);
    request.set_checkpoint_root(std::string("/ckpt/") + name);
    request.set_iface(std::string("veth-") + name);
    absl::StatusOr<int64_t> session = coordinator_->Connect(request, agent);
    ASSERT_TRUE(session.ok()) << session.status();
    (name == std::string("a") ? session_a_ : session_b_) = *session;
  }
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(2) + "launcher: mpirun\n").ok());
  std::vector<v1::Assignment> reserve =
      agent_a_.Assignments(v1::Assignment::PHASE_RESERVE);
  ASSERT_EQ(reserve.size(), 1u);
  ReservePort(session_a_, reserve[0].key());
  std::vector<v1::Assignment> start_a =
      agent_a_.Assignments(v1::Assignment::PHASE_START);
  std::vector<v1::Assignment> start_b =
      agent_b_.Assignments(v1::Assignment::PHASE_START);
  ASSERT_EQ(start_a.size(), 1u);
  ASSERT_EQ(start_b.size(), 1u);
  EXPECT_EQ(start_a[0].spec().launcher(), "mpirun");
  ASSERT_EQ(start_a[0].launch_nodes_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const v1::LaunchNode& node = start_a[0].launch_nodes(i);
    const std::string name = i == 0 ? "a" : "b";
    EXPECT_EQ(node.name(), name);
    EXPECT_EQ(node.address(), name + ".local");
    EXPECT_THAT(node.ranks(), ElementsAre(i));
    EXPECT_EQ(node.workdir(), "/srv/agent-" + name);
    EXPECT_EQ(node.checkpoint_root(), "/ckpt/" + name);
    EXPECT_EQ(node.cpus(), i == 0 ? 4 : 8);
    EXPECT_EQ(node.iface(), "veth-" + name);
  }
  // Only rank 0's node launches.
  EXPECT_EQ(start_b[0].launch_nodes_size(), 0);
}

TEST_F(CoordinatorTest, AgentRunHasNoLaunchNodes) {
  StartTwoNodeRun();
  std::vector<v1::Assignment> start_a =
      agent_a_.Assignments(v1::Assignment::PHASE_START);
  ASSERT_EQ(start_a.size(), 1u);
  EXPECT_EQ(start_a[0].launch_nodes_size(), 0);
}

TEST_F(CoordinatorTest, RankCancelledByTheSchedulerEndsTheRunCancelled) {
  const v1::AttemptKey key = StartTwoNodeRun();
  v1::AgentMessage message;
  v1::WorkerExited* exit = message.mutable_worker_exited();
  *exit->mutable_key() = key;
  exit->set_rank(0);
  exit->set_exit_code(-1);
  exit->set_error("the Slurm step was cancelled (scancel), not by hpcai500");
  exit->set_cancelled(exit->error());
  Send(session_a_, message);
  const v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_CANCELLED) << run.error();
  EXPECT_NE(run.error().find("scancel"), std::string::npos) << run.error();
  EXPECT_EQ(run.attempts_size(), 1);
  // The other node's rank is stopped.
  EXPECT_GE(agent_b_.Cancels(), 1);
}

TEST_F(CoordinatorTest, TwoNodeRunGoesFromSubmitToScoredSuccess) {
  const v1::AttemptKey key = StartTwoNodeRun();
  EXPECT_EQ(key.attempt(), 1);

  std::vector<v1::Assignment> start_a =
      agent_a_.Assignments(v1::Assignment::PHASE_START);
  std::vector<v1::Assignment> start_b =
      agent_b_.Assignments(v1::Assignment::PHASE_START);
  ASSERT_EQ(start_a.size(), 1u);
  ASSERT_EQ(start_b.size(), 1u);
  EXPECT_EQ(start_a[0].master_addr(), "10.0.0.1");
  EXPECT_EQ(start_b[0].master_port(), 29500);
  EXPECT_EQ(start_b[0].world_size(), 2);
  EXPECT_THAT(start_a[0].ranks(), ElementsAre(0));
  EXPECT_THAT(start_b[0].ranks(), ElementsAre(1));
  EXPECT_EQ(start_b[0].node_rank(), 1);
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);

  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  const int64_t lines0 = static_cast<int64_t>(
      testing::FixtureLines("events/fmnist_rank0.mllog").size());
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0), lines0);
  EXPECT_EQ(agent_b_.AckedSeq(key.run_id(), 1, 0), 0);  // acks go to sender
  EXPECT_GT(agent_b_.AckedSeq(key.run_id(), 1, 1), 0);

  Exit(session_a_, key, 0, 0);
  Exit(session_b_, key, 1, 0);

  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  ASSERT_TRUE(run.has_score());
  EXPECT_GT(run.score().valid_flops(), 0);
  EXPECT_GT(run.score().samples(), 0);
  EXPECT_EQ(run.epochs_size(), 2);
  // Stored, not only in memory.
  EXPECT_TRUE(store_->GetRun(key.run_id())->has_score());

  Coordinator::WatchCursor cursor;
  auto update =
      coordinator_->NextRunUpdate(key.run_id(), &cursor, absl::ZeroDuration());
  ASSERT_TRUE(update.ok() && update->has_value());
  EXPECT_TRUE((*update)->final());
  const std::string log = absl::StrJoin((*update)->log(), "\n");
  EXPECT_THAT(log, HasSubstr("epoch 1/2: 6000 samples in 12.0 s"));
  EXPECT_THAT(log, HasSubstr("top1 0."));
  EXPECT_THAT(log, HasSubstr("succeeded"));
}

TEST_F(CoordinatorTest, FullDiskGivesNoVerdictUntilEveryEventIsStored) {
  const v1::AttemptKey key = StartTwoNodeRun();
  const std::vector<std::string> rank0 =
      testing::FixtureLines("events/fmnist_rank0.mllog");
  const std::vector<std::string> rank1 =
      testing::FixtureLines("events/fmnist_rank1.mllog");
  ASSERT_GT(rank0.size(), 3u);
  // Sends lines [first, end) of `lines` as seqs first+1.. of `rank`.
  auto send = [&](int64_t session, int rank,
                  const std::vector<std::string>& lines, size_t first) {
    v1::AgentMessage message;
    for (size_t i = first; i < lines.size(); ++i) {
      v1::Event* event = message.mutable_events()->add_events();
      *event->mutable_key() = key;
      event->set_rank(rank);
      event->set_seq(static_cast<int64_t>(i) + 1);
      event->set_line(lines[i]);
    }
    Send(session, message);
  };
  auto exit = [&](int64_t session, int rank, int64_t last_seq) {
    v1::AgentMessage message;
    v1::WorkerExited* exited = message.mutable_worker_exited();
    *exited->mutable_key() = key;
    exited->set_rank(rank);
    exited->set_last_seq(last_seq);
    Send(session, message);
  };

  // The disk is full: rank 0's events are not stored, nor acknowledged, and
  // a submit is answered "unavailable", not refused.
  FillTheDisk();
  send(session_a_, 0, rank0, 0);
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0), 0);
  EXPECT_EQ(reads_->Health().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(coordinator_->MetricsText(),
              HasSubstr("hpcai500_store_failing 1\n"));
  // (A spec near the size limit: more than the full file has room for.)
  absl::StatusOr<v1::SubmitResponse> refused = coordinator_->Submit(
      SpecYaml(1) + "# " + std::string(60'000, 'x') + "\n");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable)
      << refused.status();

  // Space again. Later lines come first (the next batch of a live stream),
  // then both ranks exit: every rank stopped, yet rank 0 misses its start.
  ASSERT_TRUE(store_->LimitPagesForTesting(1 << 30).ok());
  send(session_a_, 0, rank0, rank0.size() - 2);
  send(session_b_, 1, rank1, 0);
  exit(session_a_, 0, static_cast<int64_t>(rank0.size()));
  exit(session_b_, 1, static_cast<int64_t>(rank1.size()));
  clock_.now_ms += 30'000;  // far past the exit grace
  coordinator_->Tick();
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_RUNNING) << run.error();
  EXPECT_EQ(store_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  EXPECT_TRUE(reads_->Health().ok());

  // The agent sends what was not acknowledged again: scored from the store.
  send(session_a_, 0, rank0, 0);
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0),
            static_cast<int64_t>(rank0.size()));
  run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  ASSERT_TRUE(run.has_score());
  EXPECT_EQ(run.epochs_size(), 2);
  EXPECT_EQ(*store_->CountEvents(),
            static_cast<int64_t>(rank0.size() + rank1.size()));
  Coordinator::WatchCursor cursor;
  auto update =
      coordinator_->NextRunUpdate(key.run_id(), &cursor, absl::ZeroDuration());
  ASSERT_TRUE(update.ok() && update->has_value());
  const std::string log = absl::StrJoin((*update)->log(), "\n");
  EXPECT_THAT(log, HasSubstr("not scored yet: events not stored (rank 0: "
                             "seq 1.."));
  EXPECT_THAT(log, HasSubstr("every event stored; scoring"));
  EXPECT_THAT(log, HasSubstr("epoch 1/2: 6000 samples in 12.0 s"));
}

TEST_F(CoordinatorTest, EventsOfAnAttemptNotSavedYetAreNotAcknowledged) {
  // Placed while the disk is full: the attempt is not in the store, which
  // would take its events for a stale attempt's.
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1)).ok());
  FillTheDisk();
  session_a_ = Register("a", &agent_a_);
  std::vector<v1::Assignment> reserve =
      agent_a_.Assignments(v1::Assignment::PHASE_RESERVE);
  ASSERT_EQ(reserve.size(), 1u);
  const v1::AttemptKey key = reserve[0].key();
  ReservePort(session_a_, key);
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0), 0);
  EXPECT_EQ(*store_->CountEvents(), 0);

  // Space again: the next tick saves the attempt; the events sent again
  // are stored and acknowledged.
  ASSERT_TRUE(store_->LimitPagesForTesting(1 << 30).ok());
  coordinator_->Tick();
  EXPECT_EQ(*store_->CurrentAttempt(key.run_id()), 1);
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  const int64_t lines = static_cast<int64_t>(
      testing::FixtureLines("events/fmnist_rank0.mllog").size());
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0), lines);
  EXPECT_EQ(*store_->CountEvents(), lines);
}

TEST_F(CoordinatorTest, RunRanksGivesEachRanksEpochsAndTheTargetEarly) {
  const v1::AttemptKey key = StartTwoNodeRun();
  absl::StatusOr<v1::RunRanksResponse> ranks = reads_->RunRanks(key.run_id());
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  EXPECT_EQ(ranks->epochs_size(), 0);
  EXPECT_GT(ranks->target(), 0) << "known before the run is scored";
  EXPECT_EQ(ranks->metric(), "top1");

  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  ranks = reads_->RunRanks(key.run_id());
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->epochs_size(), 4) << "2 epochs x 2 ranks";
  EXPECT_EQ(ranks->epochs(0).epoch(), 1);
  EXPECT_EQ(ranks->epochs(0).rank(), 0);
  EXPECT_EQ(ranks->epochs(1).rank(), 1);
  EXPECT_EQ(ranks->epochs(3).epoch(), 2);
  for (const v1::RankEpoch& row : ranks->epochs()) {
    EXPECT_EQ(row.attempt(), 1);
    EXPECT_GT(row.samples(), 0);
    EXPECT_NEAR(row.throughput(), row.samples() / row.seconds(), 1e-9);
  }
  EXPECT_TRUE(absl::IsNotFound(reads_->RunRanks(999).status()));
}

TEST_F(CoordinatorTest, RankLogTextGivesARanksEventsAndStderr) {
  const v1::AttemptKey key = StartTwoNodeRun();
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  using Log = CoordinatorView::RankLog;
  absl::StatusOr<std::string> events =
      reads_->RankLogText(key.run_id(), 1, 1, Log::kEvents);
  ASSERT_TRUE(events.ok()) << events.status();
  const std::vector<std::string> lines =
      testing::FixtureLines("events/fmnist_rank1.mllog");
  EXPECT_EQ(*events, absl::StrCat(absl::StrJoin(lines, "\n"), "\n"));
  EXPECT_EQ(*reads_->RankLogText(key.run_id(), 1, 0, Log::kEvents), "")
      << "rank 0 sent nothing yet";

  absl::StatusOr<std::string> early =
      reads_->RankLogText(key.run_id(), 1, 1, Log::kStderr);
  EXPECT_TRUE(absl::IsNotFound(early.status()));
  EXPECT_THAT(early.status().message(), HasSubstr("not exited yet"));
  Exit(session_b_, key, 1, 3, "RuntimeError: out of memory\n");
  EXPECT_EQ(*reads_->RankLogText(key.run_id(), 1, 1, Log::kStderr),
            "RuntimeError: out of memory\n");

  EXPECT_THAT(
      reads_->RankLogText(key.run_id(), 2, 0, Log::kEvents).status().message(),
      HasSubstr("no attempt 2"));
  EXPECT_THAT(
      reads_->RankLogText(key.run_id(), 1, 2, Log::kEvents).status().message(),
      HasSubstr("ranks 0 to 1"));
}

TEST_F(CoordinatorTest, DuplicateEventsAreStoredOnceAndAcked) {
  const v1::AttemptKey key = StartTwoNodeRun();
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  const int64_t stored = *store_->CountEvents();
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  EXPECT_EQ(*store_->CountEvents(), stored);
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), 1, 0), stored);
}

TEST_F(CoordinatorTest, OversizedEventLineIsRefusedButKeepsSequence) {
  const v1::AttemptKey key = StartTwoNodeRun();
  v1::AgentMessage message;
  v1::Event* event = message.mutable_events()->add_events();
  *event->mutable_key() = key;
  event->set_rank(0);
  event->set_seq(1);
  event->set_line(std::string(kMaxEventLineBytes + 1, 'x'));
  Send(session_a_, message);
  std::vector<StoredEvent> events = *store_->LoadEvents(key.run_id(), 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].line.empty());
  EXPECT_THAT(events[0].error, HasSubstr("over the limit"));
}

TEST_F(CoordinatorTest, FailingRankFailsTheRunWithItsStderrTail) {
  const v1::AttemptKey key = StartTwoNodeRun();
  Exit(session_b_, key, 1, 3, "Traceback...\nRuntimeError: out of memory\n");
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run.error(), HasSubstr("rank 1"));
  EXPECT_THAT(run.error(), HasSubstr("code 3"));
  EXPECT_THAT(run.error(), HasSubstr("out of memory"));
  // The other node is told to kill its workers.
  EXPECT_EQ(agent_a_.Cancels(), 1);
  EXPECT_EQ(store_->GetRun(key.run_id())->state(), v1::RUN_STATE_FAILED);
}

TEST_F(CoordinatorTest, RefusedSpecStoresNothing) {
  absl::StatusOr<v1::SubmitResponse> submitted =
      coordinator_->Submit(SpecYaml(2) + "colour: blue\n");
  ASSERT_FALSE(submitted.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(submitted.status()));
  EXPECT_THAT(submitted.status().message(), HasSubstr("colour"));
  EXPECT_TRUE(store_->ListRuns(v1::ListRunsRequest())->empty());
}

TEST_F(CoordinatorTest, CancelOfQueuedRunEndsItAtOnce) {
  v1::SubmitResponse submitted = *coordinator_->Submit(SpecYaml(1));
  const int64_t run_id = submitted.run_ids(0);
  EXPECT_EQ(reads_->GetRun(run_id)->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(*coordinator_->CancelRun(run_id), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(store_->GetRun(run_id)->state(), v1::RUN_STATE_CANCELLED);
  // A node arriving later gets no assignment for it.
  Register("a", &agent_a_);
  EXPECT_TRUE(agent_a_.Assignments(v1::Assignment::PHASE_RESERVE).empty());
}

TEST_F(CoordinatorTest, ListRunsFiltersByStateAndPagesBack) {
  const int64_t cancelled = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  const int64_t queued = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  ASSERT_TRUE(coordinator_->CancelRun(cancelled).ok());

  v1::ListRunsRequest request;
  request.set_state(v1::RUN_STATE_QUEUED);
  v1::ListRunsResponse response = *reads_->ListRuns(request);
  ASSERT_EQ(response.runs_size(), 1);
  EXPECT_EQ(response.runs(0).id(), queued);

  request.set_state(v1::RUN_STATE_UNSPECIFIED);
  request.set_before_id(queued);
  response = *reads_->ListRuns(request);
  ASSERT_EQ(response.runs_size(), 1);
  EXPECT_EQ(response.runs(0).id(), cancelled);
  EXPECT_EQ(response.runs(0).state(), v1::RUN_STATE_CANCELLED);
}

TEST_F(CoordinatorTest, ListRunsRefusesBadFiltersNamingTheField) {
  v1::ListRunsRequest unknown_state;
  unknown_state.set_state(static_cast<v1::RunState>(42));
  v1::ListRunsRequest long_name;
  long_name.set_name(std::string(200, 'x'));
  v1::ListRunsRequest long_config;
  long_config.set_config(std::string(200, 'x'));
  v1::ListRunsRequest negative_id;
  negative_id.set_before_id(-1);
  for (const auto& [request, field] :
       std::vector<std::pair<v1::ListRunsRequest, std::string>>{
           {unknown_state, "'state'"},
           {long_name, "'name'"},
           {long_config, "'config'"},
           {negative_id, "'before_id'"}}) {
    absl::Status status = reads_->ListRuns(request).status();
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(field));
  }
}

TEST_F(CoordinatorTest, CancelOfRunningRunTellsEveryAgent) {
  const v1::AttemptKey key = StartTwoNodeRun();
  EXPECT_EQ(*coordinator_->CancelRun(key.run_id()), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(agent_a_.Cancels(), 1);
  EXPECT_EQ(agent_b_.Cancels(), 1);
  EXPECT_EQ(coordinator_->ListNodes()->nodes(0).used_slots(), 0);
}

TEST_F(CoordinatorTest, RepetitionsBecomeRunsWithSuccessiveSeeds) {
  v1::SubmitResponse submitted = *coordinator_->Submit(SpecYaml(1, 3));
  ASSERT_EQ(submitted.run_ids_size(), 3);
  for (int i = 0; i < 3; ++i) {
    v1::Run run = *reads_->GetRun(submitted.run_ids(i));
    EXPECT_EQ(run.spec().seed(), 42 + i);
    EXPECT_EQ(run.repetition(), i + 1);
  }
}

TEST_F(CoordinatorTest, SilentNodeRequeuesItsRunWhileItHasRetries) {
  const v1::AttemptKey key = StartTwoNodeRun();
  coordinator_->Disconnect(session_b_);
  clock_.now_ms += 30'000;
  coordinator_->Tick();
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  clock_.now_ms += 31'000;
  v1::AgentMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
  Send(session_a_, heartbeat);  // a keeps talking; b stays silent
  coordinator_->Tick();
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_QUEUED);  // max_retries 1 by default
  ASSERT_EQ(run.attempts_size(), 1);
  EXPECT_EQ(run.attempts(0).state(), "requeued");
  EXPECT_THAT(run.attempts(0).error(), HasSubstr("node b silent"));
  EXPECT_THAT(run.reason(), HasSubstr("Resources"));  // b is gone
  EXPECT_EQ(agent_a_.Cancels(), 1);  // a's rank of the lost attempt stops

  // b comes back: attempt 2 starts on a and b; when it is lost too, the
  // run has no retry left and fails.
  FakeAgent b2;
  session_b_ = Register("b", &b2);
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_STARTING);
  v1::AttemptKey second = key;
  second.set_attempt(2);
  ReservePort(session_a_, second);
  coordinator_->Disconnect(session_b_);
  clock_.now_ms += 61'000;
  Send(session_a_, heartbeat);
  coordinator_->Tick();
  run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run.error(), HasSubstr("no retry left: max_retries 1"));
}

TEST_F(CoordinatorTest, LeavingNodeLosesItsAttemptAtOnceAndTakesNothingNew) {
  const v1::AttemptKey key = StartTwoNodeRun();
  FakeAgent agent_c;
  Register("c", &agent_c);
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  const int64_t stored = *store_->CountEvents();

  v1::AgentMessage leaving;
  leaving.mutable_leaving()->set_reason("stopped by SIGTERM");
  Send(session_b_, leaving);
  // No node timeout waited for: attempt 2 starts at once, on a and c.
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_STARTING);
  ASSERT_EQ(run.attempts_size(), 2);
  EXPECT_EQ(run.attempts(0).state(), "requeued");
  EXPECT_THAT(run.attempts(0).error(),
              HasSubstr("node b left (stopped by SIGTERM)"));
  EXPECT_THAT(run.attempts(1).nodes(), ElementsAre("a", "c"));
  EXPECT_EQ(agent_a_.Cancels(), 1);
  EXPECT_EQ(agent_b_.Cancels(), 1);  // b stops its rank of attempt 1
  EXPECT_EQ(NodeNamed("b").state(), "down");
  EXPECT_EQ(NodeNamed("b").state_reason(), "left: stopped by SIGTERM");

  // What b delivers while it leaves is acknowledged, and nothing stored twice;
  // what its stopped rank wrote last is stored under attempt 1 (nothing
  // lost), but only for the rank b hosted.
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  EXPECT_EQ(*store_->CountEvents(), stored);
  auto send_last = [&](int64_t session, int rank) {
    v1::AgentMessage message;
    v1::Event* event = message.mutable_events()->add_events();
    *event->mutable_key() = key;
    event->set_rank(rank);
    event->set_seq(1000);
    event->set_line(absl::StrCat(
        ":::MLLOG {\"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", "
        "\"key\": \"epoch_start\", \"value\": null, \"metadata\": "
        "{\"seq\": 1000, \"rank\": ",
        rank, "}}"));
    Send(session, message);
  };
  send_last(session_b_, 1);
  EXPECT_EQ(*store_->CountEvents(), stored + 1);
  send_last(session_b_, 1);
  send_last(session_b_, 0);  // rank 0 was a's
  send_last(session_a_, 0);  // a is not leaving: its stale events are fenced
  EXPECT_EQ(*store_->CountEvents(), stored + 1);
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_STARTING);
  // Its heartbeats are answered but do not make it schedulable again.
  v1::AgentMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
  Send(session_b_, heartbeat);
  EXPECT_EQ(NodeNamed("b").state(), "down");
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1)).ok());
  EXPECT_TRUE(agent_b_.Assignments(v1::Assignment::PHASE_RESERVE).empty());

  // Registered again (a new agent on that node), it takes runs again.
  FakeAgent b2;
  Register("b", &b2);
  EXPECT_EQ(NodeNamed("b").state(), "busy");
  EXPECT_EQ(b2.Assignments(v1::Assignment::PHASE_RESERVE).size(), 1u);
}

TEST_F(CoordinatorTest, ALiveNodeKeepsItsNameUntilItsStreamEndsOrGoesSilent) {
  FakeAgent live, impostor;
  const int64_t session = Register("c", &live);
  v1::Register request;
  request.set_name("c");
  request.set_slots(1);
  absl::StatusOr<int64_t> refused = coordinator_->Connect(request, &impostor);
  EXPECT_TRUE(absl::IsAlreadyExists(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("node c is connected and was heard 0.0 s ago"));
  // Silent past the node timeout (60 s here): its name goes to the next.
  clock_.now_ms += 60'000;
  EXPECT_TRUE(coordinator_->Connect(request, &impostor).ok());
  coordinator_->Disconnect(session);  // the replaced stream ends later
  // A stream that ended is replaced at once.
  FakeAgent d1, d2;
  const int64_t d = Register("d", &d1);
  coordinator_->Disconnect(d);
  EXPECT_TRUE(coordinator_
                  ->Connect(
                      [] {
                        v1::Register r;
                        r.set_name("d");
                        r.set_slots(1);
                        return r;
                      }(),
                      &d2)
                  .ok());
}

TEST_F(CoordinatorTest, ReRegisteredAgentListingTheAttemptKeepsItRunning) {
  const v1::AttemptKey key = StartTwoNodeRun();
  coordinator_->Disconnect(session_b_);
  FakeAgent again;
  Register("b", &again, {Running(key, {1})});
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(again.Cancels(), 0);
}

TEST_F(CoordinatorTest, ReRegisteredAgentWithoutTheAttemptRequeuesIt) {
  const v1::AttemptKey key = StartTwoNodeRun();
  coordinator_->Disconnect(session_b_);
  FakeAgent again;
  Register("b", &again);
  v1::Run run = *reads_->GetRun(key.run_id());
  // Requeued, and at once placed again on a and b as attempt 2.
  EXPECT_EQ(run.state(), v1::RUN_STATE_STARTING);
  ASSERT_EQ(run.attempts_size(), 2);
  EXPECT_THAT(run.attempts(0).error(),
              HasSubstr("node b registered again without rank 1"));
}

// One rank-0 event line (epoch < 0: none).
std::string Line(int64_t seq, int64_t time_ms, const std::string& key,
                 const std::string& value, int epoch = -1) {
  return absl::StrCat(
      ":::MLLOG {\"time_ms\": ", time_ms,
      ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"", key,
      "\", \"value\": ", value, ", \"metadata\": {\"seq\": ", seq,
      ", \"rank\": 0",
      epoch >= 0 ? absl::StrCat(", \"epoch_num\": ", epoch) : "", "}}");
}

// Rank 0's lines of an attempt from `t` that trains epochs `first`..`last`
// (10 s and 3000 samples each, then a 2 s evaluation measuring
// qualities[epoch - first], or 0.75 without), reports a checkpoint after
// each, and ends with run_stop when `finish`; a resumed attempt (first > 1)
// reports hpcai500_resume first.
std::vector<std::string> AttemptLines(
    int64_t t, int first, int last, bool finish,
    const std::vector<double>& qualities = {}) {
  std::vector<std::string> lines;
  int64_t seq = 0;
  lines.push_back(
      Line(++seq, t, "hpcai500_forward_flops_per_sample", "12000000.0"));
  if (first > 1) {
    lines.push_back(Line(++seq, t, "hpcai500_resume", absl::StrCat(first - 1)));
  }
  lines.push_back(Line(++seq, t, "run_start", "null"));
  for (int epoch = first; epoch <= last; ++epoch) {
    t += 10'000;
    lines.push_back(Line(++seq, t, "hpcai500_epoch_stats",
                         R"({"samples": 3000, "seconds": 10.0})", epoch));
    lines.push_back(Line(++seq, t, "eval_start", "null", epoch));
    t += 2'000;
    lines.push_back(Line(++seq, t, "eval_stop", "null", epoch));
    const size_t at = static_cast<size_t>(epoch - first);
    lines.push_back(Line(
        ++seq, t, "eval_accuracy",
        absl::StrCat(at < qualities.size() ? qualities[at] : 0.75), epoch));
    lines.push_back(Line(++seq, t, "hpcai500_checkpoint", "\"c\"", epoch));
  }
  if (finish) lines.push_back(Line(++seq, t, "run_stop", "null"));
  return lines;
}

class ResumeTest : public CoordinatorTest {
 protected:
  void SendLines(int64_t session, const v1::AttemptKey& key,
                 const std::vector<std::string>& lines) {
    v1::AgentMessage message;
    for (size_t i = 0; i < lines.size(); ++i) {
      v1::Event* event = message.mutable_events()->add_events();
      *event->mutable_key() = key;
      event->set_rank(0);
      event->set_seq(static_cast<int64_t>(i + 1));
      event->set_line(lines[i]);
    }
    Send(session, message);
  }

  // A one-node run on a that checkpoints epoch 1, then loses node a; b
  // takes attempt 2. Returns attempt 2's key.
  v1::AttemptKey LoseNodeAfterEpochOne(bool shared) {
    return LoseNodeAfterLines(shared, EpochOneLines().size());
  }

  // Rank 0's lines of attempt 1 through epoch 1's checkpoint, from now.
  std::vector<std::string> EpochOneLines() const {
    return AttemptLines(clock_.now_ms, 1, 1, /*finish=*/false);
  }

  // The same, but node a's agent delivered only the first `sent` of
  // EpochOneLines() before the node was lost.
  v1::AttemptKey LoseNodeAfterLines(bool shared, size_t sent) {
    session_a_ = Register("a", &agent_a_, {}, shared);
    session_b_ = Register("b", &agent_b_, {}, shared);
    v1::SubmitResponse submitted = *coordinator_->Submit(SpecYaml(1));
    v1::AttemptKey key;
    key.set_run_id(submitted.run_ids(0));
    key.set_attempt(1);
    ReservePort(session_a_, key);
    const std::vector<std::string> lines = EpochOneLines();
    SendLines(session_a_, key,
              std::vector<std::string>(lines.begin(), lines.begin() + sent));
    coordinator_->Disconnect(session_a_);
    clock_.now_ms += 61'000;
    v1::AgentMessage heartbeat;
    heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
    Send(session_b_, heartbeat);
    coordinator_->Tick();
    key.set_attempt(2);
    return key;
  }
};

TEST_F(ResumeTest, NewAttemptOnASharedNodeResumesAndCountsEachEpochOnce) {
  const v1::AttemptKey key = LoseNodeAfterEpochOne(/*shared=*/true);
  std::vector<v1::Assignment> reserve =
      agent_b_.Assignments(v1::Assignment::PHASE_RESERVE);
  ASSERT_EQ(reserve.size(), 1u);
  EXPECT_EQ(reserve[0].key().attempt(), 2);
  EXPECT_EQ(reserve[0].resume_from_attempt(), 1);
  EXPECT_EQ(reserve[0].resume_from_epoch(), 1);
  ReservePort(session_b_, key);
  SendLines(session_b_, key, AttemptLines(clock_.now_ms, 2, 2, true));
  Exit(session_b_, key, 0, 0);
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_EQ(run.attempts(1).resumed_epoch(), 1);
  EXPECT_EQ(run.score().samples(), 6000);  // epoch 1 of #1, epoch 2 of #2
  EXPECT_DOUBLE_EQ(run.score().train_seconds(), 20.0);
  ASSERT_EQ(run.epochs_size(), 2);
  EXPECT_EQ(run.epochs(0).epoch(), 1);
  // Reopened from the store, the attempt history says the same.
  OpenCoordinator();
  v1::Run stored = *reads_->GetRun(key.run_id());
  EXPECT_EQ(stored.attempts(0).state(), "requeued");
  EXPECT_EQ(stored.attempts(1).resume_from_epoch(), 1);
  EXPECT_EQ(stored.attempts(1).resumed_epoch(), 1);
}

// Runs of fashion_mnist_curve (8 epochs, target 0.75) on one node whose
// rank 0 reports a given quality curve.
class ForecastTest : public ResumeTest {
 protected:
  // Submits the run (`extra`: more spec lines) and starts it on node a.
  v1::AttemptKey StartCurveRun(const std::string& extra) {
    session_a_ = Register("a", &agent_a_);
    v1::SubmitResponse submitted = *coordinator_->Submit(absl::StrCat(
        "name: curve\nworkload: image_classification\n"
        "config: fashion_mnist_curve\nlevel: system\nnodes: 1\n"
        "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
        "seed: 1\nsystem: test-box\n",
        extra));
    v1::AttemptKey key;
    key.set_run_id(submitted.run_ids(0));
    key.set_attempt(1);
    ReservePort(session_a_, key);
    return key;
  }
  // Rank 0 has reported epochs 1..qualities.size() with those qualities.
  void Report(const v1::AttemptKey& key, const std::vector<double>& qualities,
              bool finish = false) {
    SendLines(session_a_, key,
              AttemptLines(clock_.now_ms, 1, static_cast<int>(qualities.size()),
                           finish, qualities));
  }
};

TEST_F(ForecastTest, HopelessRunIsAbortedAfterMinEpochsAndNotBefore) {
  const v1::AttemptKey key =
      StartCurveRun("abort_if_hopeless: 0.2\nmin_epochs: 4\n");
  // Levels off near 0.2 against a target of 0.75.
  Report(key, {0.10, 0.18, 0.20});
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_RUNNING) << run.error();
  ASSERT_TRUE(run.has_forecast());
  EXPECT_EQ(run.forecast().epoch(), 3);
  EXPECT_LT(run.forecast().probability(), 0.2);  // hopeless, but too early
  EXPECT_EQ(agent_a_.Cancels(), 0);

  Report(key, {0.10, 0.18, 0.20, 0.21});
  run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_ABORTED);
  EXPECT_EQ(agent_a_.Cancels(), 1);  // its workers are stopped
  EXPECT_THAT(run.error(), HasSubstr("unlikely to reach 0.75"));
  EXPECT_THAT(run.forecast().summary(), HasSubstr("node-hours saved"));
  EXPECT_EQ(run.forecast().epoch(), 4);
  // 1 node x 4 epochs left x 10 s.
  EXPECT_NEAR(run.forecast().node_hours_saved(), 40.0 / 3600.0, 1e-9);
  EXPECT_FALSE(run.has_score());
  // Stored as it ended: a restarted coordinator shows the same.
  OpenCoordinator();
  v1::Run stored = *reads_->GetRun(key.run_id());
  EXPECT_EQ(stored.state(), v1::RUN_STATE_ABORTED);
  EXPECT_EQ(stored.forecast().epoch(), 4);
  EXPECT_NEAR(stored.forecast().node_hours_saved(), 40.0 / 3600.0, 1e-9);
}

TEST_F(ForecastTest, WithoutAbortIfHopelessAHopelessRunTrainsToTheEnd) {
  const v1::AttemptKey key = StartCurveRun("");
  const std::vector<double> flat = {0.10, 0.18, 0.20, 0.21, 0.21, 0.21, 0.21};
  Report(key, flat);
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_RUNNING) << run.error();
  EXPECT_LT(run.forecast().probability(), 0.05);  // forecast, not acted on
  EXPECT_EQ(agent_a_.Cancels(), 0);
  std::vector<double> all = flat;
  all.push_back(0.21);
  Report(key, all, /*finish=*/true);
  Exit(session_a_, key, 0, 0);
  run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_FALSE(run.score().reached_target());
}

TEST_F(ForecastTest, LatestForecastSurvivesARestartWhileRunning) {
  const v1::AttemptKey key =
      StartCurveRun("abort_if_hopeless: 0.05\nmin_epochs: 3\n");
  // Heading over 0.75: never aborted.
  Report(key, {0.55, 0.66, 0.71, 0.74});
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_RUNNING) << run.error();
  EXPECT_GT(run.forecast().probability(), 0.5);
  EXPECT_GT(run.forecast().reach_epoch(), 4);
  OpenCoordinator();
  v1::Run stored = *reads_->GetRun(key.run_id());
  EXPECT_EQ(stored.forecast().epoch(), 4);
  EXPECT_EQ(stored.forecast().probability(), run.forecast().probability());
}

TEST_F(ResumeTest, NewAttemptOnANodeWithoutTheCheckpointStartsFresh) {
  const v1::AttemptKey key = LoseNodeAfterEpochOne(/*shared=*/false);
  std::vector<v1::Assignment> reserve =
      agent_b_.Assignments(v1::Assignment::PHASE_RESERVE);
  ASSERT_EQ(reserve.size(), 1u);
  EXPECT_EQ(reserve[0].resume_from_epoch(), 0);
  ReservePort(session_b_, key);
  SendLines(session_b_, key, AttemptLines(clock_.now_ms, 1, 2, true));
  Exit(session_b_, key, 0, 0);
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_EQ(run.score().samples(), 6000);  // both epochs of attempt 2 only
}

// What b's agent reports for attempt 1's checkpoint of `epoch`, found with
// its manifest: the lines of `lines` after the first `stored` (those the
// coordinator got before node a died), with the digest of its files.
v1::FoundCheckpoint FoundCheckpointOf(const std::vector<std::string>& lines,
                                      size_t stored, int64_t run_id,
                                      int epoch) {
  CheckpointManifest manifest;
  manifest.run_id = run_id;
  manifest.attempt = 1;
  manifest.epoch = epoch;
  manifest.files = {{std::string(64, 'a'), CheckpointFileName(epoch)}};
  manifest.events.assign(lines.begin() + static_cast<std::ptrdiff_t>(stored),
                         lines.end());
  v1::FoundCheckpoint found;
  found.set_attempt(1);
  found.set_manifest(FormatCheckpointManifest(manifest));
  found.set_digest(CheckpointDigest(manifest.files));
  return found;
}

// The issue's case: node a died right after its worker wrote epoch 1's
// checkpoint, before its agent sent a line of epoch 1.
TEST_F(ResumeTest, ACheckpointFoundOnDiskMovesTheResumePointBeforeStart) {
  const std::vector<std::string> lines = EpochOneLines();
  const size_t sent = 2;  // flops and run_start
  const v1::AttemptKey key = LoseNodeAfterLines(/*shared=*/true, sent);
  std::vector<v1::Assignment> reserve =
      agent_b_.Assignments(v1::Assignment::PHASE_RESERVE);
  ASSERT_EQ(reserve.size(), 1u);
  EXPECT_EQ(reserve[0].resume_from_epoch(), 0);  // nothing acknowledged
  EXPECT_EQ(reserve[0].probe_checkpoints_attempt(), 1);

  v1::AgentMessage port;
  *port.mutable_port_reserved()->mutable_key() = key;
  port.mutable_port_reserved()->set_host("10.0.0.1");
  port.mutable_port_reserved()->set_port(29500);
  *port.mutable_port_reserved()->add_found_checkpoints() =
      FoundCheckpointOf(lines, sent, key.run_id(), 1);
  Send(session_b_, port);
  std::vector<v1::Assignment> start =
      agent_b_.Assignments(v1::Assignment::PHASE_START);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].resume_from_attempt(), 1);
  EXPECT_EQ(start[0].resume_from_epoch(), 1);

  // Attempt 2 trains epoch 2; the score counts epoch 1 of attempt 1 (its
  // lines taken from the manifest) and epoch 2 of attempt 2, each once.
  SendLines(session_b_, key, AttemptLines(clock_.now_ms, 2, 2, true));
  Exit(session_b_, key, 0, 0);
  v1::Run run = *reads_->GetRun(key.run_id());
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_EQ(run.attempts(1).resumed_epoch(), 1);
  EXPECT_EQ(run.score().samples(), 6000);
  EXPECT_EQ(run.epochs_size(), 2);
}

TEST_F(ResumeTest, ACheckpointFoundWithAnotherDigestIsIgnored) {
  const std::vector<std::string> lines =
      AttemptLines(clock_.now_ms, 1, 2, /*finish=*/false);
  const v1::AttemptKey key = LoseNodeAfterEpochOne(/*shared=*/true);
  v1::FoundCheckpoint found =
      FoundCheckpointOf(lines, EpochOneLines().size(), key.run_id(), 2);
  found.set_digest(std::string(64, '0'));  // the files changed since
  v1::AgentMessage port;
  *port.mutable_port_reserved()->mutable_key() = key;
  port.mutable_port_reserved()->set_host("10.0.0.1");
  port.mutable_port_reserved()->set_port(29500);
  *port.mutable_port_reserved()->add_found_checkpoints() = found;
  Send(session_b_, port);
  std::vector<v1::Assignment> start =
      agent_b_.Assignments(v1::Assignment::PHASE_START);
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0].resume_from_epoch(), 1);  // the acknowledged one
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.attempts(1).resume_from_epoch(), 1);
}

// The worker finished while hpcai500d was down: its agent lists the rank
// as exited and sends the exit after registering; the run is scored.
TEST_F(CoordinatorTest, RanksThatFinishedWhileTheCoordinatorWasDownSucceed) {
  const v1::AttemptKey key = StartTwoNodeRun();
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  OpenCoordinator();  // killed and restarted; both workers ended meanwhile
  FakeAgent a2, b2;
  session_a_ = Register("a", &a2, {Running(key, {}, {0})});
  session_b_ = Register("b", &b2, {Running(key, {}, {1})});
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  Exit(session_a_, key, 0, 0);
  Exit(session_b_, key, 1, 0);
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_TRUE(run.has_score());
  ASSERT_EQ(a2.sent.back().acks().exits_size(), 1);  // the exit is stored
  EXPECT_EQ(a2.sent.back().acks().exits(0).rank(), 0);
}

// An exit stored before a restart is not lost with the coordinator's
// memory: the agent that already forgot the rank does not fail the run.
TEST_F(CoordinatorTest, StoredExitsSurviveARestart) {
  const v1::AttemptKey key = StartTwoNodeRun();
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  Exit(session_a_, key, 0, 0);
  OpenCoordinator();
  FakeAgent a2, b2;
  session_a_ = Register("a", &a2);  // rank 0 done: acknowledged and forgotten
  session_b_ = Register("b", &b2, {Running(key, {1})});
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  Exit(session_b_, key, 1, 0);
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(CoordinatorTest, EventsAndExitsOfAnEndedRunAreAckedAndDropped) {
  const v1::AttemptKey key = StartTwoNodeRun();
  ASSERT_TRUE(coordinator_->CancelRun(key.run_id()).ok());
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  EXPECT_EQ(*store_->CountEvents(), 0);
  EXPECT_EQ(agent_a_.AckedSeq(key.run_id(), key.attempt(), 0), 21);
  Exit(session_a_, key, 0, -1);
  ASSERT_EQ(agent_a_.sent.back().acks().exits_size(), 1);
}

TEST_F(CoordinatorTest, CancelForADisconnectedNodeReachesItOnReconnect) {
  const v1::AttemptKey key = StartTwoNodeRun();
  coordinator_->Disconnect(session_b_);
  ASSERT_TRUE(coordinator_->CancelRun(key.run_id()).ok());
  FakeAgent again;
  Register("b", &again, {Running(key, {1})});
  EXPECT_EQ(again.Cancels(), 1);
}

TEST_F(CoordinatorTest, HeartbeatsAreAnsweredAndRegisteredNamesTheTimeout) {
  session_a_ = Register("a", &agent_a_);
  ASSERT_TRUE(agent_a_.sent.front().has_registered());
  EXPECT_EQ(agent_a_.sent.front().registered().node_timeout_ms(), 60'000);
  v1::AgentMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
  Send(session_a_, heartbeat);
  EXPECT_TRUE(agent_a_.sent.back().has_heartbeat());
}

// A maintenance window is stored, survives a restart of hpcai500d, reaches
// the agents, and keeps silent nodes (and their runs) until its end plus
// the node timeout, not longer.
TEST_F(CoordinatorTest,
       MaintenanceWindowKeepsSilentNodesUntilItsEndPlusTimeout) {
  const v1::AttemptKey key = StartTwoNodeRun();
  const int64_t until = clock_.now_ms + 600'000;
  absl::StatusOr<v1::MaintenanceWindow> window =
      coordinator_->SetMaintenance(600'000, "upgrade", "root");
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->until_ms(), until);
  ASSERT_TRUE(agent_b_.sent.back().has_maintenance());
  EXPECT_EQ(agent_b_.sent.back().maintenance().until_ms(), until);

  OpenCoordinator();  // hpcai500d restarted; no agent is back yet
  v1::MaintenanceWindow shown = coordinator_->ListNodes()->maintenance();
  EXPECT_EQ(shown.until_ms(), until);
  EXPECT_EQ(shown.reason(), "upgrade");
  EXPECT_EQ(shown.started_by(), "root");
  FakeAgent c;
  Register("c", &c);
  EXPECT_EQ(c.sent.front().registered().maintenance_until_ms(), until);

  clock_.now_ms = until + 59'000;
  coordinator_->Tick();
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(coordinator_->ListNodes()->maintenance().until_ms(), 0);  // over
  clock_.now_ms = until + 61'000;
  coordinator_->Tick();
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_QUEUED);
  EXPECT_THAT(run.attempts(0).error(), HasSubstr("silent"));
}

TEST_F(CoordinatorTest, MaintenanceWindowEndsAndRefusesBadDurations) {
  session_a_ = Register("a", &agent_a_);
  EXPECT_EQ(coordinator_->SetMaintenance(-1, "", "root").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coordinator_->SetMaintenance(kMaxMaintenanceMs + 1, "", "root")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(coordinator_->SetMaintenance(60'000, "", "root").ok());
  absl::StatusOr<v1::MaintenanceWindow> ended =
      coordinator_->SetMaintenance(0, "", "root");
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->until_ms(), 0);
  ASSERT_TRUE(agent_a_.sent.back().has_maintenance());
  EXPECT_EQ(agent_a_.sent.back().maintenance().until_ms(), 0);
  OpenCoordinator();
  EXPECT_EQ(store_->LoadMaintenance()->until_ms(), 0);
  FakeAgent again;
  Register("a", &again);
  EXPECT_EQ(again.sent.front().registered().maintenance_until_ms(), 0);
}

TEST_F(CoordinatorTest, RunLargerThanTheClusterIsRefusedAtSubmit) {
  Register("a", &agent_a_);
  Register("b", &agent_b_);
  absl::StatusOr<v1::SubmitResponse> refused =
      coordinator_->Submit(SpecYaml(5));
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("needs 5 node(s) of queue default with 1 slot(s) "
                        "each; of the 2 registered node(s), 2 can host it"));
  EXPECT_TRUE(store_->ListRuns(v1::ListRunsRequest())->empty());
}

TEST_F(CoordinatorTest, RunWaitingForNodesDoesNotBlockRunsThatFit) {
  session_a_ = Register("a", &agent_a_);
  session_b_ = Register("b", &agent_b_);
  coordinator_->Disconnect(session_b_);  // b may come back
  v1::SubmitResponse big = *coordinator_->Submit(SpecYaml(2, 1, "big"));
  v1::SubmitResponse small = *coordinator_->Submit(SpecYaml(1, 1, "small"));
  v1::Run waiting = *reads_->GetRun(big.run_ids(0));
  EXPECT_EQ(waiting.state(), v1::RUN_STATE_QUEUED);
  EXPECT_THAT(waiting.reason(),
              HasSubstr("Resources: needs 2 node(s) of queue default with 1 "
                        "free slot(s); 1 of the 2 matching node(s) are up"));
  EXPECT_EQ(reads_->GetRun(small.run_ids(0))->state(), v1::RUN_STATE_STARTING);
}

TEST_F(CoordinatorTest, WaitingReasonCountsDownToTheExpectedStart) {
  session_a_ = Register("a", &agent_a_);
  ASSERT_TRUE(
      coordinator_->Submit(SpecYaml(1, 1, "first") + "time_limit: 600\n").ok());
  v1::SubmitResponse next = *coordinator_->Submit(SpecYaml(1, 1, "next"));
  EXPECT_THAT(reads_->GetRun(next.run_ids(0))->reason(),
              HasSubstr("expected to start within 600 s on a"));
  clock_.now_ms += 60'000;
  v1::AgentMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
  Send(session_a_, heartbeat);  // the node stays in touch
  coordinator_->Tick();
  // Nothing changed but the time: the reason says so all the same.
  EXPECT_THAT(reads_->GetRun(next.run_ids(0))->reason(),
              HasSubstr("expected to start within 540 s on a"));
}

TEST_F(CoordinatorTest, ListRunsShowsActiveRunsAsTheyAreInMemory) {
  session_a_ = Register("a", &agent_a_);
  coordinator_->Disconnect(Register("b", &agent_b_));  // b may come back
  v1::SubmitResponse big = *coordinator_->Submit(SpecYaml(2, 1, "big"));
  v1::SubmitResponse small = *coordinator_->Submit(SpecYaml(1, 1, "small"));
  // Why a run waits is never stored: only the coordinator's copy has it.
  EXPECT_TRUE(store_->GetRun(big.run_ids(0))->reason().empty());
  v1::ListRunsResponse listed = *reads_->ListRuns({});
  ASSERT_EQ(listed.runs_size(), 2);
  EXPECT_EQ(listed.runs(0).id(), small.run_ids(0));
  EXPECT_EQ(listed.runs(0).state(), v1::RUN_STATE_STARTING);
  EXPECT_EQ(listed.runs(1).id(), big.run_ids(0));
  EXPECT_EQ(listed.runs(1).state(), v1::RUN_STATE_QUEUED);
  EXPECT_FALSE(listed.runs(1).reason().empty());
}

// A spec may name a sweep by hand, but not one holding another user's
// runs: nobody adds points to somebody else's scaling study, and the
// owner's own later submits (and suites, as `hpcai500 sweep` sends) pass.
TEST_F(CoordinatorTest, ASweepOfAnotherUserIsRefusedAndOnesOwnAccepted) {
  const std::string sweep = "sweep: study-1\nscaling: weak\n";
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1, 1, "p1") + sweep, "alice").ok());
  absl::StatusOr<v1::SubmitResponse> joined =
      coordinator_->Submit(SpecYaml(1, 1, "p2") + sweep, "mallory");
  EXPECT_TRUE(absl::IsPermissionDenied(joined.status())) << joined.status();
  EXPECT_THAT(joined.status().message(), HasSubstr("sweep 'study-1'"));
  // As `hpcai500 sweep` sends its points: one suite named by the sweep.
  const std::string suite =
      "suite: study-1\nspecs:\n  - " +
      absl::StrReplaceAll(SpecYaml(1, 1, "p3") + sweep, {{"\n", "\n    "}}) +
      "\n  - " +
      absl::StrReplaceAll(SpecYaml(1, 1, "p5") + sweep, {{"\n", "\n    "}}) +
      "\n";
  const absl::Status theirs = coordinator_->Submit(suite, "mallory").status();
  EXPECT_TRUE(absl::IsPermissionDenied(theirs)) << theirs;
  EXPECT_EQ(reads_->ListRuns({})->runs_size(), 1);  // nothing of mallory's
  const absl::Status own = coordinator_->Submit(suite, "alice").status();
  EXPECT_TRUE(own.ok()) << own;
  EXPECT_TRUE(coordinator_->Submit(SpecYaml(1, 1, "p4") + sweep, "alice").ok());
  // Another id is free to take; a name that only holds the id is no match.
  EXPECT_TRUE(coordinator_
                  ->Submit(SpecYaml(1, 1, "study-1") +
                               "sweep: study-10\nscaling: weak\n",
                           "mallory")
                  .ok());
}

TEST_F(CoordinatorTest, JsonApiListsRunsByUserQueueAndTime) {
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1, 1, "mine"), "alice").ok());
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1, 1, "theirs"), "bob").ok());
  HttpRouter router(reads_.get(), "/nonexistent");
  auto get = [&](const std::string& target) {
    return router.Handle(
        HttpRequest(boost::beast::http::verb::get, target, 11));
  };
  HttpResponse alice = get("/api/v1/runs?user=alice&since=1");
  ASSERT_EQ(alice.result(), boost::beast::http::status::ok) << alice.body();
  nlohmann::json json = nlohmann::json::parse(alice.body());
  ASSERT_EQ(json["runs"].size(), 1u) << alice.body();
  EXPECT_EQ(json["runs"][0]["user"], "alice");
  HttpResponse none = get("/api/v1/runs?until=1");
  ASSERT_EQ(none.result(), boost::beast::http::status::ok) << none.body();
  EXPECT_EQ(
      nlohmann::json::parse(none.body()).value("runs", nlohmann::json()).size(),
      0u);
  HttpResponse bad = get("/api/v1/runs?since=yesterday");
  EXPECT_EQ(bad.result(), boost::beast::http::status::bad_request);
  EXPECT_THAT(bad.body(), HasSubstr("'since'"));
}

// A history of finished runs of one series stored as hpcai500d stores them,
// the worker's binary digest changed half-way and every run after it 10%
// slower; a restarted coordinator finds the change and names the digest.
TEST_F(CoordinatorTest, ChangesOfAStoredHistoryAreFoundAndAttributed) {
  v1::RunSpec spec;
  spec.set_name("nightly");
  spec.set_workload("image_classification");
  spec.set_config("fashion_mnist_smoke");
  const double noise[] = {0.02, -0.03, 0.01, 0.0, -0.01, 0.03, -0.02};
  std::vector<int64_t> ids;
  for (int i = 0; i < 24; ++i) {
    const int64_t id =
        CreateSubmission(*store_, "name: nightly", {spec}, i)->run_ids(0);
    ids.push_back(id);
    v1::Run run = *store_->GetRun(id);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.set_finished_ms(1'000'000 + i);
    auto& fields = *run.mutable_fingerprint()->mutable_fields();
    fields["worker_digest"] = i < 12 ? "aaa111" : "bbb222";
    fields["nodes"] = "a";
    ASSERT_TRUE(store_->UpdateRun(run).ok());
    v1::Score score;
    score.set_samples(1000);
    score.set_train_seconds((i < 12 ? 10 : 11) + noise[i % 7]);
    score.set_valid_flops(1e9 / score.train_seconds());
    score.set_quality(0.9);
    ASSERT_TRUE(store_->SaveResult(id, score).ok());
  }
  OpenCoordinator();
  v1::ListChangesRequest request;
  request.set_name("nightly");
  request.set_regressions_only(true);
  const v1::ListChangesResponse changes = *reads_->ListChanges(request);
  ASSERT_EQ(changes.changes_size(), 2) << changes.DebugString();
  for (const v1::ChangePoint& change : changes.changes()) {
    EXPECT_EQ(change.run_id(), ids[12]);
    EXPECT_TRUE(change.regression());
    EXPECT_EQ(change.attribution(),
              "worker_digest aaa111 -> bbb222 in every run after; node set "
              "unchanged");
  }
  request.set_name("other");
  EXPECT_EQ(reads_->ListChanges(request)->changes_size(), 0);

  HttpRouter router(reads_.get(), "/nonexistent");
  auto get = [&](const std::string& target) {
    return router.Handle(
        HttpRequest(boost::beast::http::verb::get, target, 11));
  };
  HttpResponse listed = get("/api/v1/changes?name=nightly&regressions=1");
  ASSERT_EQ(listed.result(), boost::beast::http::status::ok) << listed.body();
  const nlohmann::json json = nlohmann::json::parse(listed.body());
  ASSERT_EQ(json["changes"].size(), 2u) << listed.body();
  EXPECT_EQ(json["changes"][0]["changed_fields"][0], "worker_digest");
  HttpResponse later = get("/api/v1/changes?since=2000000");
  ASSERT_EQ(later.result(), boost::beast::http::status::ok) << later.body();
  EXPECT_EQ(nlohmann::json::parse(later.body())["changes"].size(), 0u);
  HttpResponse bad = get("/api/v1/changes?regressions=maybe");
  EXPECT_EQ(bad.result(), boost::beast::http::status::bad_request);
  EXPECT_THAT(bad.body(), HasSubstr("'regressions'"));
}

TEST_F(CoordinatorTest, AttemptPastItsTimeLimitFailsTheRun) {
  session_a_ = Register("a", &agent_a_);
  v1::SubmitResponse submitted =
      *coordinator_->Submit(SpecYaml(1) + "time_limit: 60\n");
  v1::AgentMessage heartbeat;
  for (int64_t step : {59'000, 2'000}) {
    clock_.now_ms += step;
    heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
    Send(session_a_, heartbeat);  // the node stays in touch
    coordinator_->Tick();
    if (step == 59'000) {
      EXPECT_EQ(reads_->GetRun(submitted.run_ids(0))->state(),
                v1::RUN_STATE_STARTING);
    }
  }
  v1::Run run = *reads_->GetRun(submitted.run_ids(0));
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(run.error(), HasSubstr("time limit of 60 s"));
  EXPECT_EQ(agent_a_.Cancels(), 1);
}

TEST_F(CoordinatorTest, RestartKeepsQueueAndRunningAttempt) {
  const v1::AttemptKey key = StartTwoNodeRun();
  SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
  v1::SubmitResponse queued = *coordinator_->Submit(SpecYaml(2));
  OpenCoordinator();  // hpcai500d restarted; agents reconnect
  EXPECT_EQ(reads_->GetRun(queued.run_ids(0))->state(), v1::RUN_STATE_QUEUED);
  FakeAgent a2, b2;
  session_a_ = Register("a", &a2, {Running(key, {0})});
  session_b_ = Register("b", &b2, {Running(key, {1})});
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  SendFixture(session_b_, key, 1, "fmnist_rank1.mllog");
  Exit(session_a_, key, 0, 0);
  Exit(session_b_, key, 1, 0);
  v1::Run run = *reads_->GetRun(key.run_id());
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error();
  EXPECT_TRUE(run.has_score());
  // The freed nodes take the queued run.
  EXPECT_EQ(a2.Assignments(v1::Assignment::PHASE_RESERVE).size(), 1u);
  EXPECT_EQ(reads_->GetRun(queued.run_ids(0))->state(), v1::RUN_STATE_STARTING);
}

TEST_F(CoordinatorTest, EventsOfAStaleAttemptAreNotStored) {
  const v1::AttemptKey key = StartTwoNodeRun();
  v1::AttemptKey stale = key;
  stale.set_attempt(key.attempt() + 5);
  SendFixture(session_a_, stale, 0, "fmnist_rank0.mllog");
  EXPECT_EQ(*store_->CountEvents(), 0);
}

class LeaderboardTest : public CoordinatorTest {
 protected:
  // Submits `yaml` and succeeds each of its runs on node a with the fixture
  // events of rank 0 (a one-node run).
  v1::SubmitResponse SucceedSubmission(const std::string& yaml) {
    if (session_a_ == 0) session_a_ = Register("a", &agent_a_);
    v1::SubmitResponse submitted = *coordinator_->Submit(yaml);
    for (int64_t run_id : submitted.run_ids()) {
      v1::Run run = *reads_->GetRun(run_id);
      EXPECT_EQ(run.state(), v1::RUN_STATE_STARTING);
      v1::AttemptKey key;
      key.set_run_id(run_id);
      key.set_attempt(1);
      ReservePort(session_a_, key);
      SendFixture(session_a_, key, 0, "fmnist_rank0.mllog");
      Exit(session_a_, key, 0, 0);
      EXPECT_EQ(reads_->GetRun(run_id)->state(), v1::RUN_STATE_SUCCEEDED);
    }
    return submitted;
  }
};

TEST_F(LeaderboardTest, ARunEndsWithItsFingerprintStored) {
  session_a_ = RegisterNode("a", &agent_a_, /*gpus=*/0, {{"rack", "r7"}});
  const int64_t run_id = SucceedSubmission(SpecYaml(1)).run_ids(0);
  const v1::Run stored = *store_->GetRun(run_id);
  const auto& fields = stored.fingerprint().fields();
  EXPECT_EQ(fields.at("nodes"), "a");
  EXPECT_EQ(fields.at("cpu"), "Test CPU");
  EXPECT_EQ(fields.at("gpu"), "none");
  EXPECT_EQ(fields.at("label.rack"), "r7");
  EXPECT_EQ(fields.at("spec.workload"), stored.spec().workload());
  EXPECT_THAT(fields.at("coordinator"), HasSubstr("hpcai500d "));
  // The read side serves it too.
  EXPECT_EQ(reads_->GetRun(run_id)->fingerprint().fields().at("label.rack"),
            "r7");
}

TEST_F(LeaderboardTest, RanksSubmissionsByValidFlopsWithUnrankedLast) {
  // Three single-run submissions with the same events: equal scores except
  // that the one with fewer epochs is unranked.
  v1::SubmitResponse first = SucceedSubmission(SpecYaml(1, 1, "first"));
  v1::SubmitResponse second = SucceedSubmission(SpecYaml(1, 1, "second"));
  v1::SubmitResponse shortened =
      SucceedSubmission(SpecYaml(1, 1, "short") + "epochs: 1\n");
  v1::LeaderboardRequest request;
  request.set_workload("image_classification");
  v1::LeaderboardResponse board = *reads_->Leaderboard(request);
  ASSERT_EQ(board.rows_size(), 3);
  EXPECT_EQ(board.rows(0).rank(), 1);
  EXPECT_EQ(board.rows(1).rank(), 2);
  EXPECT_TRUE(board.rows(0).ranked());
  EXPECT_GE(board.rows(0).valid_flops(), board.rows(1).valid_flops());
  EXPECT_EQ(board.rows(2).submission_id(), shortened.submission_id());
  EXPECT_FALSE(board.rows(2).ranked());
  EXPECT_EQ(board.rows(2).rank(), 0);
}

TEST_F(LeaderboardTest, AggregatesRepetitionsIntoOneRow) {
  v1::SubmitResponse submitted = SucceedSubmission(SpecYaml(1, 3));
  v1::LeaderboardResponse board =
      *reads_->Leaderboard(v1::LeaderboardRequest());
  ASSERT_EQ(board.rows_size(), 1);
  const v1::LeaderboardRow& row = board.rows(0);
  EXPECT_EQ(row.runs(), 3);
  EXPECT_THAT(row.run_ids(),
              ElementsAre(submitted.run_ids(0), submitted.run_ids(1),
                          submitted.run_ids(2)));
  const double vflops =
      reads_->GetRun(submitted.run_ids(0))->score().valid_flops();
  EXPECT_DOUBLE_EQ(row.valid_flops(), vflops);  // identical repetitions
  EXPECT_DOUBLE_EQ(row.valid_flops_min(), vflops);
  // Served with the coordinator's repeatability limits; identical
  // repetitions do not vary.
  EXPECT_DOUBLE_EQ(board.throughput_cv_limit(), 0.02);
  EXPECT_DOUBLE_EQ(row.throughput_cv(), 0);
  EXPECT_FALSE(row.unrepeatable());
}

TEST_F(LeaderboardTest, SubmissionWithAFailedRunIsNotListed) {
  session_a_ = Register("a", &agent_a_);
  v1::SubmitResponse submitted = *coordinator_->Submit(SpecYaml(1));
  v1::AttemptKey key;
  key.set_run_id(submitted.run_ids(0));
  key.set_attempt(1);
  ReservePort(session_a_, key);
  Exit(session_a_, key, 0, 1, "boom");
  EXPECT_EQ(reads_->Leaderboard(v1::LeaderboardRequest())->rows_size(), 0);
}

TEST_F(LeaderboardTest, InvalidatedResultLeavesTheBoardAndKeepsTheRecord) {
  v1::SubmitResponse kept = SucceedSubmission(SpecYaml(1, 1, "kept"));
  v1::SubmitResponse bad = SucceedSubmission(SpecYaml(1, 2, "bad"));
  EXPECT_EQ(reads_->Leaderboard(v1::LeaderboardRequest())->rows_size(), 2);
  EXPECT_TRUE(absl::IsInvalidArgument(
      coordinator_->InvalidateRun(bad.run_ids(1), "root", "").status()));
  absl::StatusOr<v1::Run> invalidated = coordinator_->InvalidateRun(
      bad.run_ids(1), "root", "the node's clock jumped mid-run");
  ASSERT_TRUE(invalidated.ok()) << invalidated.status();
  EXPECT_EQ(invalidated->invalidated_by(), "root");
  v1::LeaderboardResponse board =
      *reads_->Leaderboard(v1::LeaderboardRequest());
  ASSERT_EQ(board.rows_size(), 1);  // the whole submission left
  EXPECT_EQ(board.rows(0).submission_id(), kept.submission_id());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      coordinator_->InvalidateRun(bad.run_ids(1), "root", "again").status()));
  // The record stays, with who and why, also after a restart.
  OpenCoordinator();
  v1::Run stored = *reads_->GetRun(bad.run_ids(1));
  EXPECT_TRUE(stored.has_score());
  EXPECT_EQ(stored.invalidation_reason(), "the node's clock jumped mid-run");
  EXPECT_EQ(reads_->Leaderboard(v1::LeaderboardRequest())->rows_size(), 1);
}

TEST_F(CoordinatorTest, OnlyASucceededRunCanBeInvalidated) {
  session_a_ = Register("a", &agent_a_);
  v1::SubmitResponse queued = *coordinator_->Submit(SpecYaml(1));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      coordinator_->InvalidateRun(queued.run_ids(0), "root", "why").status()));
  EXPECT_TRUE(absl::IsNotFound(
      coordinator_->InvalidateRun(999, "root", "why").status()));
}

TEST_F(LeaderboardTest, UnknownWorkloadIsInvalidArgument) {
  v1::LeaderboardRequest request;
  request.set_workload("chess");
  EXPECT_TRUE(absl::IsInvalidArgument(reads_->Leaderboard(request).status()));
}

// A finished, scored single-run submission written straight into the store
// (the worker cannot train every workload here); returns its submission id.
int64_t StoreScoredSubmission(Store& store, const std::string& workload,
                              const std::string& config,
                              const std::string& name, double valid_flops) {
  v1::RunSpec spec;
  spec.set_name(name);
  spec.set_workload(workload);
  spec.set_config(config);
  spec.set_level("free");
  spec.set_nodes(1);
  spec.set_ranks_per_node(1);
  spec.set_device("cpu");
  spec.set_precision("fp32");
  spec.set_batch_size(4);
  spec.set_repetitions(1);
  spec.set_system("box-" + name);
  spec.set_ranked(true);
  absl::StatusOr<v1::SubmitResponse> submitted =
      CreateSubmission(store, "name: " + name + "\n", {spec}, 1000);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  const int64_t run_id = submitted->run_ids(0);
  v1::Run run = *store.GetRun(run_id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_finished_ms(2000);
  EXPECT_TRUE(store.UpdateRun(run).ok());
  v1::Score score;
  score.set_quality(0.5);
  score.set_target(0.35);
  score.set_exponent(5);
  score.set_flops(valid_flops / 2);
  score.set_valid_flops(valid_flops);
  score.set_reached_target(true);
  EXPECT_TRUE(store.SaveResult(run_id, score).ok());
  return submitted->submission_id();
}

TEST_F(LeaderboardTest, RanksEachWorkloadApartNeverInOneOrdering) {
  // Interleaved submissions; the best EWA score is far above every IC score.
  const int64_t ic_low = StoreScoredSubmission(*store_, "image_classification",
                                               "fashion_mnist", "ic-low", 5e11);
  const int64_t ewa_low = StoreScoredSubmission(*store_, "extreme_weather",
                                                "ewa_smoke", "ewa-low", 1e12);
  const int64_t ic_high = StoreScoredSubmission(
      *store_, "image_classification", "fashion_mnist", "ic-high", 2e12);
  const int64_t ewa_high = StoreScoredSubmission(*store_, "extreme_weather",
                                                 "ewa_smoke", "ewa-high", 9e12);

  // Unfiltered: each workload's rows together, each ranked 1..k on its own.
  v1::LeaderboardResponse all = *reads_->Leaderboard(v1::LeaderboardRequest());
  ASSERT_EQ(all.rows_size(), 4);
  std::vector<std::string> order;
  for (const v1::LeaderboardRow& row : all.rows()) {
    order.push_back(
        absl::StrCat(row.workload(), " ", row.rank(), " ", row.name()));
  }
  EXPECT_THAT(order, ElementsAre("extreme_weather 1 ewa-high",
                                 "extreme_weather 2 ewa-low",
                                 "image_classification 1 ic-high",
                                 "image_classification 2 ic-low"));

  // Filtered by workload: only that workload, ranked from 1.
  for (const auto& [workload, best, second] :
       {std::tuple{"image_classification", ic_high, ic_low},
        std::tuple{"extreme_weather", ewa_high, ewa_low}}) {
    v1::LeaderboardRequest request;
    request.set_workload(workload);
    v1::LeaderboardResponse board = *reads_->Leaderboard(request);
    ASSERT_EQ(board.rows_size(), 2) << workload;
    EXPECT_EQ(board.rows(0).submission_id(), best) << workload;
    EXPECT_EQ(board.rows(0).rank(), 1) << workload;
    EXPECT_EQ(board.rows(1).submission_id(), second) << workload;
    EXPECT_EQ(board.rows(1).rank(), 2) << workload;
    for (const v1::LeaderboardRow& row : board.rows()) {
      EXPECT_EQ(row.workload(), workload);
    }
  }

  // The HTTP JSON API the page reads gives the same separate rankings.
  HttpRouter router(reads_.get(), "/nonexistent");
  HttpRequest get(boost::beast::http::verb::get,
                  "/api/v1/leaderboard?workload=extreme_weather", 11);
  HttpResponse response = router.Handle(get);
  ASSERT_EQ(response.result(), boost::beast::http::status::ok)
      << response.body();
  nlohmann::json json = nlohmann::json::parse(response.body());
  ASSERT_EQ(json["rows"].size(), 2u) << response.body();
  EXPECT_EQ(json["rows"][0]["name"], "ewa-high");
  EXPECT_EQ(json["rows"][0]["rank"], 1);
  EXPECT_EQ(json["rows"][1]["name"], "ewa-low");
  EXPECT_EQ(json["rows"][1]["rank"], 2);
  for (const nlohmann::json& row : json["rows"]) {
    EXPECT_EQ(row["workload"], "extreme_weather");
  }
}

TEST_F(LeaderboardTest, PagesThroughTheJsonApiWithTheTotal) {
  StoreScoredSubmission(*store_, "image_classification", "fashion_mnist",
                        "ic-low", 5e11);
  StoreScoredSubmission(*store_, "extreme_weather", "ewa_smoke", "ewa-low",
                        1e12);
  StoreScoredSubmission(*store_, "image_classification", "fashion_mnist",
                        "ic-high", 2e12);
  StoreScoredSubmission(*store_, "extreme_weather", "ewa_smoke", "ewa-high",
                        9e12);
  HttpRouter router(reads_.get(), "/nonexistent");
  auto get = [&](const std::string& target) {
    return router.Handle(
        HttpRequest(boost::beast::http::verb::get, target, 11));
  };
  // The second and third rows: a page that starts inside a group still
  // carries the group's ranks.
  HttpResponse page = get("/api/v1/leaderboard?limit=2&offset=1");
  ASSERT_EQ(page.result(), boost::beast::http::status::ok) << page.body();
  nlohmann::json json = nlohmann::json::parse(page.body());
  EXPECT_EQ(json["total"], 4);
  ASSERT_EQ(json["rows"].size(), 2u) << page.body();
  EXPECT_EQ(json["rows"][0]["name"], "ewa-low");
  EXPECT_EQ(json["rows"][0]["rank"], 2);
  EXPECT_EQ(json["rows"][1]["name"], "ic-high");
  EXPECT_EQ(json["rows"][1]["rank"], 1);

  for (const char* bad :
       {"/api/v1/leaderboard?limit=10001", "/api/v1/leaderboard?limit=-1",
        "/api/v1/leaderboard?offset=x"}) {
    HttpResponse refused = get(bad);
    EXPECT_EQ(refused.result(), boost::beast::http::status::bad_request) << bad;
    EXPECT_THAT(
        refused.body(),
        HasSubstr(absl::StrContains(bad, "offset") ? "'offset'" : "'limit'"))
        << bad;
  }
  v1::LeaderboardRequest too_many;
  too_many.set_limit(10'001);
  absl::Status status = reads_->Leaderboard(too_many).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("10000"));
}

TEST_F(CoordinatorTest, MetricsCountRunsQueueNodesAndEvents) {
  Register("a", &agent_a_);
  coordinator_->Disconnect(Register("b", &agent_b_));
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(2)).ok());
  const std::string metrics = coordinator_->MetricsText();
  EXPECT_THAT(metrics, HasSubstr("hpcai500_runs{state=\"queued\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("hpcai500_queue_length 1"));
  EXPECT_THAT(metrics, HasSubstr("hpcai500_nodes_connected 1"));
  EXPECT_THAT(metrics, HasSubstr("hpcai500_events_ingested_total 0"));
}

TEST_F(CoordinatorTest, HeldRunWaitsUntilReleasedAndStaysHeldAcrossARestart) {
  session_a_ = Register("a", &agent_a_);
  const int64_t first = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  const int64_t second = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  absl::StatusOr<v1::Run> held = coordinator_->HoldRun(second, "alice");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->held_by(), "alice");
  EXPECT_EQ(coordinator_->HoldRun(first, "alice").status().code(),
            absl::StatusCode::kFailedPrecondition);  // placed already
  ASSERT_TRUE(coordinator_->CancelRun(first).ok());  // a is free now
  v1::Run waiting = *reads_->GetRun(second);
  EXPECT_EQ(waiting.state(), v1::RUN_STATE_QUEUED);
  EXPECT_THAT(waiting.reason(), HasSubstr("Held: by alice"));

  OpenCoordinator();
  session_a_ = Register("a", &agent_a_);
  EXPECT_EQ(reads_->GetRun(second)->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(reads_->GetRun(second)->held_by(), "alice");
  ASSERT_TRUE(coordinator_->ReleaseRun(second).ok());
  EXPECT_EQ(reads_->GetRun(second)->state(), v1::RUN_STATE_STARTING);
  EXPECT_EQ(coordinator_->ReleaseRun(second).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CoordinatorTest, DrainedNodeFinishesWhatItRunsAndGetsNothingNew) {
  session_a_ = Register("a", &agent_a_);
  const int64_t running = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  ASSERT_TRUE(coordinator_->DrainNode("a", "").status().code() ==
              absl::StatusCode::kInvalidArgument);  // a reason is required
  absl::StatusOr<v1::Node> draining = coordinator_->DrainNode("a", "bad fan");
  ASSERT_TRUE(draining.ok()) << draining.status();
  EXPECT_EQ(draining->state(), "draining");
  EXPECT_EQ(draining->state_reason(), "bad fan");
  EXPECT_EQ(reads_->GetRun(running)->state(), v1::RUN_STATE_STARTING);
  EXPECT_EQ(agent_a_.Cancels(), 0);  // what it runs goes on

  const int64_t next = coordinator_->Submit(SpecYaml(1))->run_ids(0);
  ASSERT_TRUE(coordinator_->CancelRun(running).ok());
  EXPECT_EQ(reads_->GetRun(next)->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(NodeNamed("a").state(), "drained");

  OpenCoordinator();  // drained is kept
  session_a_ = Register("a", &agent_a_);
  EXPECT_EQ(NodeNamed("a").state(), "drained");
  EXPECT_EQ(reads_->GetRun(next)->state(), v1::RUN_STATE_QUEUED);
  absl::StatusOr<v1::Node> resumed = coordinator_->ResumeNode("a");
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(reads_->GetRun(next)->state(), v1::RUN_STATE_STARTING);
  EXPECT_EQ(NodeNamed("a").state(), "busy");
  EXPECT_EQ(coordinator_->DrainNode("nope", "x").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CoordinatorTest, QueuesPriorityAndConstraintsPlaceRunsWhereTheyBelong) {
  queues_ = {{"cpu", {{"kind", "cpu"}}, 100, 1000, 0, true},
             {"gpu", {{"kind", "gpu"}}, 200, 500, 3600, false}};
  OpenCoordinator();
  session_a_ = RegisterNode("a", &agent_a_, 0, {{"kind", "cpu"}});
  session_b_ =
      RegisterNode("b", &agent_b_, 1, {{"kind", "gpu"}, {"gpu_model", "h200"}});
  EXPECT_THAT(
      coordinator_->Submit(SpecYaml(1) + "queue: tpu\n").status().message(),
      HasSubstr("unknown queue 'tpu'; queues: cpu, gpu"));
  EXPECT_THAT(coordinator_->Submit(SpecYaml(1) + "queue: gpu\npriority: 900\n")
                  .status()
                  .message(),
              HasSubstr("queue gpu allows at most 500, got 900"));
  EXPECT_THAT(
      coordinator_->Submit(SpecYaml(1) + "constraints: [gpu_model=a100]\n")
          .status()
          .message(),
      HasSubstr("labelled gpu_model=a100 each; of the 2 registered "
                "node(s), 0 can host it"));

  const int64_t gpu_run =
      coordinator_
          ->Submit(SpecYaml(1) + "queue: gpu\nconstraints: {gpu_model: h200}\n")
          ->run_ids(0);
  v1::Run placed = *reads_->GetRun(gpu_run);
  EXPECT_EQ(placed.queue(), "gpu");
  EXPECT_EQ(placed.priority(), 200);              // the queue's default
  EXPECT_EQ(placed.spec().time_limit_s(), 3600);  // the queue's max
  ASSERT_EQ(placed.attempts_size(), 1);
  EXPECT_THAT(placed.attempts(0).nodes(), ElementsAre("b"));
  ASSERT_EQ(placed.attempts(0).inventory().count("b"), 1u);
  EXPECT_EQ(placed.attempts(0).inventory().at("b").devices(0).model(),
            "NVIDIA H200");
  EXPECT_THAT(NodeNamed("b").queues(), ElementsAre("gpu"));

  const v1::ListQueuesResponse queues = coordinator_->ListQueues();
  ASSERT_EQ(queues.queues_size(), 2);
  EXPECT_EQ(queues.queues(1).name(), "gpu");
  EXPECT_EQ(queues.queues(1).running_runs(), 1);
  EXPECT_EQ(queues.queues(0).idle_nodes(), 1);
}

TEST_F(CoordinatorTest, CudaRunNeverGoesToANodeWithoutGpus) {
  session_a_ = RegisterNode("a", &agent_a_, 0, {});
  const std::string cuda =
      absl::StrCat(SpecYaml(1).substr(0, SpecYaml(1).find("device:")),
                   "device: cuda\nbatch_size: 64\nprecision: fp32\nseed: "
                   "42\nsystem: test-box\n");
  absl::StatusOr<v1::SubmitResponse> refused = coordinator_->Submit(cuda);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("and 1 GPU(s)"));

  session_b_ = RegisterNode("b", &agent_b_, 1, {});
  const int64_t run = coordinator_->Submit(cuda)->run_ids(0);
  EXPECT_THAT(reads_->GetRun(run)->attempts(0).nodes(), ElementsAre("b"));
}

TEST_F(CoordinatorTest, SuiteIsOneSubmissionPerSpecAndGoesInWholeOrNotAtAll) {
  session_a_ = Register("a", &agent_a_);
  // Each spec as an item of the list: "  - " before its first line.
  const std::string suite =
      "suite: nightly\nspecs:\n  - " +
      absl::StrReplaceAll(SpecYaml(1, 2, "first"), {{"\n", "\n    "}}) +
      "\n  - " +
      absl::StrReplaceAll(SpecYaml(1, 1, "second"), {{"\n", "\n    "}}) + "\n";
  absl::StatusOr<v1::SubmitResponse> submitted = coordinator_->Submit(suite);
  ASSERT_TRUE(submitted.ok()) << submitted.status() << "\n" << suite;
  EXPECT_EQ(submitted->suite(), "nightly");
  EXPECT_EQ(submitted->submission_ids_size(), 2);
  ASSERT_EQ(submitted->run_ids_size(), 3);
  EXPECT_EQ(reads_->GetRun(submitted->run_ids(2))->spec().name(), "second");

  const std::string bad =
      "---\n" + SpecYaml(1, 1, "fine") + "---\n" + SpecYaml(9, 1, "huge");
  absl::StatusOr<v1::SubmitResponse> refused = coordinator_->Submit(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("spec 2: the run needs 9"));
  v1::ListRunsRequest fine;
  fine.set_name("fine");
  EXPECT_TRUE(reads_->ListRuns(fine)->runs().empty());  // none stored
}

// A suite file with one spec under `specs:` was stored as the whole file,
// which then failed as a spec ("field 'suite': unknown key").
TEST_F(CoordinatorTest, SuiteOfOneListedSpecIsThatSpec) {
  session_a_ = Register("a", &agent_a_);
  const std::string suite =
      "suite: single\nspecs:\n  - " +
      absl::StrReplaceAll(SpecYaml(1, 1, "only"), {{"\n", "\n    "}}) + "\n";
  absl::StatusOr<v1::SubmitResponse> submitted = coordinator_->Submit(suite);
  ASSERT_TRUE(submitted.ok()) << submitted.status() << "\n" << suite;
  EXPECT_EQ(submitted->submission_ids_size(), 1);
  ASSERT_EQ(submitted->run_ids_size(), 1);
  EXPECT_EQ(reads_->GetRun(submitted->run_ids(0))->spec().name(), "only");
}

TEST_F(CoordinatorTest, SuiteWhoseLaterSpecCannotBeStoredStoresNoSpec) {
  session_a_ = Register("a", &agent_a_);
  // The store fails on the second spec's submission, as a full disk would.
  ExecOnDatabase(
      "CREATE TRIGGER refuse_doomed BEFORE INSERT ON submissions WHEN "
      "NEW.spec_yaml LIKE '%name: doomed%' BEGIN SELECT RAISE(ABORT, "
      "'refused by the test'); END;");
  const std::string suite =
      "---\n" + SpecYaml(1, 1, "fine") + "---\n" + SpecYaml(1, 1, "doomed");
  absl::StatusOr<v1::SubmitResponse> refused = coordinator_->Submit(suite);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("refused by the test"));
  EXPECT_TRUE(store_->ListRuns(v1::ListRunsRequest())->empty())
      << "the first spec is not stored either";
  EXPECT_TRUE(agent_a_.Assignments(v1::Assignment::PHASE_RESERVE).empty())
      << "nor queued and placed";
  EXPECT_TRUE(reads_->ListRuns(v1::ListRunsRequest())->runs().empty());
}

TEST_F(CoordinatorTest, IngestLagOfAnyEventTimeIsMeasuredWithoutOverflow) {
  const v1::AttemptKey key = StartTwoNodeRun();
  v1::AgentMessage message;
  v1::Event* event = message.mutable_events()->add_events();
  *event->mutable_key() = key;
  event->set_rank(0);
  event->set_seq(1);
  // time_ms is the worker's clock: anything an int64 holds.
  event->set_line(
      ":::MLLOG {\"time_ms\": -9223372036854775808, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"epoch_start\", \"value\": null, "
      "\"metadata\": {\"seq\": 1, \"rank\": 0}}");
  Send(session_a_, message);
  ASSERT_EQ(agent_a_.AckedSeq(key.run_id(), key.attempt(), 0), 1);
  const std::string metrics = coordinator_->MetricsText();
  EXPECT_THAT(metrics, HasSubstr("hpcai500_ingest_lag_seconds_count 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("hpcai500_ingest_lag_seconds_bucket{le=\"300\"} 0\n"))
      << "an event from ages ago lags ages, not 0 s";
}

TEST_F(CoordinatorTest, NodeThatLeftIsForgottenAfterTheRetentionAndMayReturn) {
  node_retention_ms_ = 3'600'000;
  OpenCoordinator();
  FakeAgent pilot;
  LeaveAndDisconnect(Register("n1-4242", &pilot), "stopped by SIGTERM");
  clock_.now_ms += 3'600'000 - 1;
  coordinator_->Tick();
  EXPECT_EQ(NodeNamed("n1-4242").state_reason(), "left: stopped by SIGTERM");

  clock_.now_ms += 1;
  ::testing::internal::CaptureStderr();
  coordinator_->Tick();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(NodeNames().empty());
  EXPECT_TRUE(store_->ListNodes()->empty()) << "its row is gone too";
  EXPECT_THAT(log, HasSubstr("node n1-4242: forgotten, silent for 1h (left: "
                             "stopped by SIGTERM; node retention 1h)"));

  // Nothing of it stays behind: the name registers anew and takes runs.
  FakeAgent again;
  Register("n1-4242", &again);
  EXPECT_EQ(NodeNamed("n1-4242").state(), "idle");
  ASSERT_TRUE(coordinator_->Submit(SpecYaml(1)).ok());
  EXPECT_EQ(again.Assignments(v1::Assignment::PHASE_RESERVE).size(), 1u);
}

TEST_F(CoordinatorTest, DownNodeIsKeptWhileItHoldsARunsSlots) {
  node_retention_ms_ = 30'000;  // shorter than the node timeout (60 s)
  OpenCoordinator();
  const v1::AttemptKey key = StartTwoNodeRun();
  coordinator_->Disconnect(session_b_);
  clock_.now_ms += 40'000;
  coordinator_->Tick();
  EXPECT_THAT(NodeNames(), ElementsAre("a", "b")) << "b's run may come back";
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_RUNNING);
  // The node timeout requeues the run, freeing b, which is then forgotten.
  clock_.now_ms += 21'000;
  v1::AgentMessage heartbeat;
  heartbeat.mutable_heartbeat()->set_time_ms(clock_.now_ms);
  Send(session_a_, heartbeat);
  coordinator_->Tick();
  EXPECT_EQ(reads_->GetRun(key.run_id())->state(), v1::RUN_STATE_QUEUED);
  EXPECT_THAT(NodeNames(), ElementsAre("a"));
}

TEST_F(CoordinatorTest, DrainedNodeIsKeptUntilResumedThenForgotten) {
  node_retention_ms_ = 3'600'000;
  OpenCoordinator();
  session_a_ = Register("a", &agent_a_);
  ASSERT_TRUE(coordinator_->DrainNode("a", "bad DIMM").ok());
  coordinator_->Disconnect(session_a_);
  clock_.now_ms += 2 * 3'600'000;
  coordinator_->Tick();
  EXPECT_EQ(NodeNamed("a").state(), "drained") << "an admin's mark stays";
  EXPECT_EQ(NodeNamed("a").state_reason(), "bad DIMM");
  ASSERT_TRUE(coordinator_->ResumeNode("a").ok());
  coordinator_->Tick();
  EXPECT_TRUE(NodeNames().empty());
}

TEST_F(CoordinatorTest, RetentionZeroKeepsDownNodesForEver) {
  node_retention_ms_ = 0;
  OpenCoordinator();
  FakeAgent pilot;
  LeaveAndDisconnect(Register("n1-7", &pilot), "allocation ended");
  clock_.now_ms += int64_t{10} * 365 * 24 * 3'600'000;
  coordinator_->Tick();
  EXPECT_THAT(NodeNames(), ElementsAre("n1-7"));
}

TEST_F(CoordinatorTest, RetentionCountsFromTheAgentsLastWordAcrossARestart) {
  node_retention_ms_ = 3'600'000;
  OpenCoordinator();
  session_a_ = Register("a", &agent_a_);  // up when hpcai500d stops
  FakeAgent pilot;
  LeaveAndDisconnect(Register("n1-9", &pilot), "stopped by SIGTERM");
  clock_.now_ms += 40 * 60'000;
  OpenCoordinator();  // a restart: nobody reconnects
  EXPECT_EQ(NodeNamed("n1-9").state_reason(), "left: stopped by SIGTERM")
      << "the left node is still shown as such";
  clock_.now_ms += 20 * 60'000;
  coordinator_->Tick();
  EXPECT_THAT(NodeNames(), ElementsAre("a"))
      << "n1-9 left an hour ago; a was up until the restart 20 minutes ago";
  clock_.now_ms += 40 * 60'000;
  coordinator_->Tick();
  EXPECT_TRUE(NodeNames().empty());
}

}  // namespace
}  // namespace hpcai500
