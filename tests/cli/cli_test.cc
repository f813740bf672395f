#include "cli/cli.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/commands/commands.h"
#include "common/error_cause.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "methodology/suite.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A coordinator's ClientService over canned answers, recording requests.
class FakeClientService final : public v1::ClientService::Service {
 public:
  grpc::Status Submit(grpc::ServerContext* context,
                      const v1::SubmitRequest* request,
                      v1::SubmitResponse* response) override {
    absl::MutexLock lock(&mu_);
    submitted_yaml_ = request->spec_yaml();
    request_ids_.push_back(request->request_id());
    auto auth = context->client_metadata().find("authorization");
    if (auth != context->client_metadata().end()) {
      authorization_ = std::string(auth->second.data(), auth->second.size());
    }
    if (lost_submits_ > 0) {
      --lost_submits_;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "Socket closed");
    }
    if (!submit_status_.ok()) return submit_status_;
    *response = submit_response_;
    return grpc::Status::OK;
  }

  grpc::Status GetRun(grpc::ServerContext*, const v1::GetRunRequest* request,
                      v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(request->run_id());
    if (it == runs_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such run");
    }
    *response = it->second;
    return grpc::Status::OK;
  }

  // Filters like the coordinator: newest first, every filter set, at most
  // the limit (0: 100).
  grpc::Status ListRuns(grpc::ServerContext*,
                        const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override {
    absl::MutexLock lock(&mu_);
    list_requests_.push_back(*request);
    const int limit = request->limit() > 0 ? request->limit() : 100;
    for (auto it = runs_.rbegin();
         it != runs_.rend() && response->runs_size() < limit; ++it) {
      const v1::Run& run = it->second;
      const v1::RunSpec& spec = run.spec();
      if ((request->name().empty() || spec.name() == request->name()) &&
          (request->workload().empty() ||
           spec.workload() == request->workload()) &&
          (request->config().empty() || spec.config() == request->config()) &&
          (request->state() == v1::RUN_STATE_UNSPECIFIED ||
           run.state() == request->state()) &&
          (request->before_id() == 0 || run.id() < request->before_id())) {
        *response->add_runs() = run;
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status WatchRun(grpc::ServerContext*,
                        const v1::WatchRunRequest* request,
                        grpc::ServerWriter<v1::RunUpdate>* writer) override {
    std::vector<v1::RunUpdate> updates;
    {
      absl::MutexLock lock(&mu_);
      watched_.push_back(request->run_id());
      auto it = updates_.find(request->run_id());
      if (it == updates_.end()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such run");
      }
      updates = it->second;
    }
    for (const v1::RunUpdate& update : updates) writer->Write(update);
    return grpc::Status::OK;
  }

  grpc::Status CancelRun(grpc::ServerContext*,
                         const v1::CancelRunRequest* request,
                         v1::CancelRunResponse* response) override {
    absl::MutexLock lock(&mu_);
    cancelled_ = request->run_id();
    response->set_state(v1::RUN_STATE_CANCELLED);
    return grpc::Status::OK;
  }

  // Pages the canned board like the coordinator: rows from the offset, at
  // most the limit (0: all), and the total before paging.
  grpc::Status Leaderboard(grpc::ServerContext*,
                           const v1::LeaderboardRequest* request,
                           v1::LeaderboardResponse* response) override {
    absl::MutexLock lock(&mu_);
    leaderboard_requests_.push_back(*request);
    const int rows = leaderboard_.rows_size();
    const int end = request->limit() > 0
                        ? std::min(rows, request->offset() + request->limit())
                        : rows;
    for (int i = request->offset(); i < end; ++i) {
      *response->add_rows() = leaderboard_.rows(i);
    }
    response->set_total(rows);
    response->set_throughput_cv_limit(leaderboard_.throughput_cv_limit());
    response->set_epochs_to_target_cv_limit(
        leaderboard_.epochs_to_target_cv_limit());
    return grpc::Status::OK;
  }

  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* response) override {
    absl::MutexLock lock(&mu_);
    *response = nodes_;
    return grpc::Status::OK;
  }

  grpc::Status InvalidateRun(grpc::ServerContext*,
                             const v1::InvalidateRunRequest* request,
                             v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    invalidate_request_ = *request;
    response->set_id(request->run_id());
    response->set_invalidated_by("root");
    return grpc::Status::OK;
  }

  grpc::Status ListAudit(grpc::ServerContext*,
                         const v1::ListAuditRequest* request,
                         v1::ListAuditResponse* response) override {
    absl::MutexLock lock(&mu_);
    audit_limit_ = request->limit();
    *response = audit_;
    return grpc::Status::OK;
  }

  grpc::Status GetBaseline(grpc::ServerContext*,
                           const v1::GetBaselineRequest* request,
                           v1::Baseline* response) override {
    absl::MutexLock lock(&mu_);
    auto it = baselines_.find(request->spec().name());
    if (it == baselines_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "none promoted");
    }
    *response = it->second;
    return grpc::Status::OK;
  }

  grpc::Status PromoteBaseline(grpc::ServerContext*,
                               const v1::PromoteBaselineRequest* request,
                               v1::Baseline* response) override {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(request->run_id());
    if (it == runs_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such run");
    }
    response->set_run_id(request->run_id());
    response->set_promoted_by("alice");
    baselines_[it->second.spec().name()] = *response;
    return grpc::Status::OK;
  }

  // Canned answers; set before the CLI runs.
  absl::Mutex mu_;
  // Promoted baselines by spec name.
  std::map<std::string, v1::Baseline> baselines_ ABSL_GUARDED_BY(mu_);
  grpc::Status submit_status_ ABSL_GUARDED_BY(mu_);
  // Submits answered UNAVAILABLE ("Socket closed") before the canned answer.
  int lost_submits_ ABSL_GUARDED_BY(mu_) = 0;
  v1::SubmitResponse submit_response_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, v1::Run> runs_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::vector<v1::RunUpdate>> updates_ ABSL_GUARDED_BY(mu_);
  v1::LeaderboardResponse leaderboard_ ABSL_GUARDED_BY(mu_);
  v1::ListNodesResponse nodes_ ABSL_GUARDED_BY(mu_);
  v1::ListAuditResponse audit_ ABSL_GUARDED_BY(mu_);
  v1::InvalidateRunRequest invalidate_request_ ABSL_GUARDED_BY(mu_);
  int audit_limit_ ABSL_GUARDED_BY(mu_) = -1;
  // What the CLI sent.
  std::string submitted_yaml_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> request_ids_ ABSL_GUARDED_BY(mu_);  // per try
  std::string authorization_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> watched_ ABSL_GUARDED_BY(mu_);
  int64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<v1::LeaderboardRequest> leaderboard_requests_
      ABSL_GUARDED_BY(mu_);
  std::vector<v1::ListRunsRequest> list_requests_ ABSL_GUARDED_BY(mu_);
};

v1::Run FinishedRun(int64_t id, v1::RunState state, double quality,
                    bool reached) {
  v1::Run run;
  run.set_id(id);
  run.set_submission_id(1);
  run.set_state(state);
  run.mutable_spec()->set_name("fmnist-smoke");
  run.mutable_spec()->set_workload("image_classification");
  run.mutable_spec()->set_config("fashion_mnist_smoke");
  run.set_created_ms(1700000000000);
  if (state == v1::RUN_STATE_SUCCEEDED) {
    v1::Score* score = run.mutable_score();
    score->set_quality(quality);
    score->set_target(0.8);
    score->set_exponent(5);
    score->set_flops(2.0e9);
    score->set_valid_flops(1.5e9);
    score->set_reached_target(reached);
  } else {
    run.set_error("worker rank 1 exited with code 3");
  }
  return run;
}

// The updates of a run that starts, logs one epoch and ends as `end`.
std::vector<v1::RunUpdate> UpdatesEndingAs(const v1::Run& end) {
  std::vector<v1::RunUpdate> updates(3);
  updates[0].mutable_run()->set_id(end.id());
  updates[0].mutable_run()->set_state(v1::RUN_STATE_RUNNING);
  updates[1].mutable_run()->set_id(end.id());
  updates[1].mutable_run()->set_state(v1::RUN_STATE_RUNNING);
  updates[1].add_log("epoch 1: 2400 samples/s, accuracy 0.7900");
  *updates[2].mutable_run() = end;
  updates[2].add_log("run_stop");
  updates[2].set_final(true);
  return updates;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    dir_ =
        fs::path(::testing::TempDir()) /
        ("cli_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
    spec_path_ = (dir_ / "spec.yaml").string();
    std::ofstream(spec_path_) << "name: fmnist-smoke\n";
  }
  void TearDown() override {
    server_->Shutdown();
    fs::remove_all(dir_);
  }

  // Runs the CLI against the in-process fake coordinator.
  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    CliEnvironment env;
    env.coordinator_env = coordinator_env_;
    env.token_env = token_env_;
    env.in = &in_;
    env.out = &out_;
    env.err = &err_;
    env.time_zone = absl::UTCTimeZone();
    env.retry.sleep = [this](absl::Duration wait) { waits_.push_back(wait); };
    env.connect = [this](const std::string& address,
                         const std::shared_ptr<grpc::ChannelCredentials>&)
        -> std::unique_ptr<v1::ClientService::StubInterface> {
      connected_to_ = address;
      return v1::ClientService::NewStub(
          server_->InProcessChannel(grpc::ChannelArguments()));
    };
    return RunCli(args, env);
  }

  void SetWatch(const v1::Run& end) {
    absl::MutexLock lock(&service_.mu_);
    service_.updates_[end.id()] = UpdatesEndingAs(end);
  }
  void SetSubmitted(std::vector<int64_t> run_ids) {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id : run_ids) service_.submit_response_.add_run_ids(id);
  }

  FakeClientService service_;
  std::unique_ptr<grpc::Server> server_;
  fs::path dir_;
  std::string spec_path_;
  std::optional<std::string> coordinator_env_;
  std::optional<std::string> token_env_;
  std::istringstream in_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::string connected_to_;
  std::vector<absl::Duration> waits_;  // what retries slept
};

// What a check run's watch stream shows: `states` in turn, each update
// with its attempt (placed at 1000 ms, created at 900 ms); the last is
// final, ended at 1600 ms with `epochs` epochs of 0.25 s and `error`.
std::vector<v1::RunUpdate> CheckUpdates(int64_t id,
                                        const std::vector<v1::RunState>& states,
                                        int epochs, const std::string& error) {
  std::vector<v1::RunUpdate> updates;
  for (v1::RunState state : states) {
    v1::Run* run = updates.emplace_back().mutable_run();
    run->set_id(id);
    run->set_state(state);
    run->set_created_ms(900);
    v1::Attempt* attempt = run->add_attempts();
    attempt->set_number(1);
    attempt->set_started_ms(1000);
  }
  v1::Run* last = updates.back().mutable_run();
  last->set_finished_ms(1600);
  last->set_error(error);
  for (int e = 1; e <= epochs; ++e) {
    v1::EpochSummary* epoch = last->add_epochs();
    epoch->set_epoch(e);
    epoch->set_seconds(0.25);
  }
  updates.back().set_final(true);
  return updates;
}

class CheckCliTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    absl::MutexLock lock(&service_.mu_);
    v1::Node* node = service_.nodes_.add_nodes();
    node->set_name("node-a");
    node->set_state("idle");
    node->set_slots(1);
    service_.submit_response_.add_run_ids(7);
  }
  void SetUpdates(std::vector<v1::RunUpdate> updates) {
    absl::MutexLock lock(&service_.mu_);
    service_.updates_[7] = std::move(updates);
  }
};

TEST_F(CheckCliTest, AHealthyNodeGetsEveryPhaseTimed) {
  SetUpdates(CheckUpdates(
      7,
      {v1::RUN_STATE_STARTING, v1::RUN_STATE_RUNNING, v1::RUN_STATE_SUCCEEDED},
      /*epochs=*/1, ""));
  EXPECT_EQ(Run({"check", "node-a"}), kExitOk) << out_.str() << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("check node-a: queued             0.100 s  run 7 "
                             "placed\n"));
  EXPECT_THAT(out, HasSubstr("check node-a: started"));
  EXPECT_THAT(out, HasSubstr("check node-a: rendezvous/epoch   0.250 s"));
  EXPECT_THAT(out, HasSubstr("check node-a: exited"));
  EXPECT_THAT(out, HasSubstr("check node-a: healthy ("));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_THAT(service_.submitted_yaml_, HasSubstr("node: node-a"));
}

TEST_F(CheckCliTest, ARunThatFailedAtItsLaunchIsNotReportedLaunched) {
  // Placed, then failed before any worker ran: no "started" phase.
  SetUpdates(CheckUpdates(7, {v1::RUN_STATE_STARTING, v1::RUN_STATE_FAILED},
                          /*epochs=*/0, "rank 0: cannot start the worker"));
  EXPECT_EQ(Run({"check", "node-a"}), kExitFailed);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("check node-a: queued"));
  EXPECT_THAT(out, Not(HasSubstr("launched")));
  EXPECT_THAT(out, Not(HasSubstr("check node-a: exited")));
  EXPECT_THAT(out, HasSubstr("check node-a: UNHEALTHY: run 7 failed: rank 0: "
                             "cannot start the worker\n"));
}

TEST_F(CheckCliTest, ADrainedNodeIsNamedAndNothingIsSubmitted) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.nodes_.mutable_nodes(0)->set_state("drained");
    service_.nodes_.mutable_nodes(0)->set_state_reason("fan");
  }
  EXPECT_EQ(Run({"check", "node-a"}), kExitFailed);
  EXPECT_EQ(out_.str(),
            "check node-a: UNHEALTHY: node node-a is drained: fan\n");
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, SubmitSendsTheFileAndPrintsEachRunId) {
  SetSubmitted({5, 6});
  EXPECT_EQ(Run({"submit", spec_path_}), kExitOk);
  EXPECT_EQ(out_.str(), "5\n6\n");
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "name: fmnist-smoke\n");
  EXPECT_TRUE(service_.watched_.empty());
}

// A spec the builtin registry accepts, for the commands that parse it here.
constexpr char kSweepSpec[] =
    "name: fmnist\nworkload: image_classification\n"
    "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
    "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
    "seed: 1\nsystem: lab\n";

TEST_F(CliTest, SweepDryRunListsThePointsAndSubmitsNothing) {
  std::ofstream(spec_path_) << kSweepSpec;
  EXPECT_EQ(Run({"sweep", spec_path_, "--nodes", "1,2,4", "--precision",
                 "fp32,bf16", "--scaling", "strong", "--dry-run"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("6 runs, strong scaling (global batch "
                                    "fixed); dry run, nothing submitted"));
  // 64 over 4 devices: 16 per rank, the global batch still 64.
  EXPECT_THAT(out_.str(),
              HasSubstr("\nfmnist-4n1r-bf16-none      4           1        4  "
                        "bf16       none                 16            64\n"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, SweepSubmitsOneSuiteOfMarkedPointsAndPrintsTheRunIds) {
  std::ofstream(spec_path_) << kSweepSpec;
  SetSubmitted({7, 8});
  EXPECT_EQ(Run({"sweep", spec_path_, "--nodes", "1,2"}), kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "7\n8\n");
  EXPECT_THAT(err_.str(), HasSubstr("sweep fmnist-"));
  EXPECT_THAT(err_.str(), HasSubstr(": 2 runs, weak scaling"));
  absl::MutexLock lock(&service_.mu_);
  absl::StatusOr<Suite> suite = ParseSuite(service_.submitted_yaml_);
  ASSERT_TRUE(suite.ok()) << suite.status();
  ASSERT_EQ(suite->specs.size(), 2u);
  EXPECT_THAT(suite->name, ::testing::StartsWith("fmnist-"));
  EXPECT_THAT(suite->specs[1], HasSubstr("name: fmnist-2n1r-fp32-none\n"));
  EXPECT_THAT(suite->specs[1], HasSubstr("sweep: " + suite->name + "\n"));
  EXPECT_THAT(suite->specs[1], HasSubstr("scaling: weak\n"));
}

TEST_F(CliTest, SweepRefusesASpecOrAxisWithAClearError) {
  std::ofstream(spec_path_) << kSweepSpec;
  EXPECT_EQ(Run({"sweep", spec_path_, "--nodes", "1,0"}), kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("--nodes: '0' is not a count between 1 and 4096"));
  EXPECT_EQ(Run({"sweep", spec_path_, "--nodes", "1,3", "--ranks-per-node", "2",
                 "--scaling", "strong"}),
            kExitRefused);
  EXPECT_THAT(err_.str(), HasSubstr("does not divide over 6 ranks"));
  std::ofstream(spec_path_) << "name: fmnist\n";
  EXPECT_EQ(Run({"sweep", spec_path_, "--nodes", "1,2"}), kExitRefused);
  EXPECT_THAT(err_.str(), HasSubstr("refused: field 'workload': is required"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, SubmitRetriesALostAnswerWithTheSameNewRequestId) {
  SetSubmitted({5});
  {
    absl::MutexLock lock(&service_.mu_);
    service_.lost_submits_ = 2;
  }
  EXPECT_EQ(Run({"submit", spec_path_}), kExitOk);
  EXPECT_EQ(out_.str(), "5\n");
  EXPECT_THAT(err_.str(), HasSubstr("Socket closed"));
  EXPECT_THAT(
      err_.str(),
      HasSubstr("(try 3 of " + std::to_string(RetryPolicy().max_tries) + ")"));
  EXPECT_EQ(waits_.size(), 2u);
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.request_ids_.size(), 3u);
  EXPECT_EQ(service_.request_ids_[0].size(), 32u) << "128 bits in hex";
  EXPECT_EQ(service_.request_ids_[1], service_.request_ids_[0]);
  EXPECT_EQ(service_.request_ids_[2], service_.request_ids_[0]);
}

TEST_F(CliTest, EachSubmitInvocationHasItsOwnRequestId) {
  SetSubmitted({5});
  EXPECT_EQ(Run({"submit", spec_path_}), kExitOk);
  EXPECT_EQ(Run({"submit", spec_path_}), kExitOk);
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.request_ids_.size(), 2u);
  EXPECT_NE(service_.request_ids_[0], service_.request_ids_[1]);
}

TEST_F(CliTest, SubmitGivesUpAfterEveryTryNamingTheIdToSubmitAgainWith) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.lost_submits_ = 100;
  }
  EXPECT_EQ(Run({"submit", spec_path_}), kExitUnavailable);
  EXPECT_EQ(out_.str(), "");
  absl::MutexLock lock(&service_.mu_);
  const size_t tries = RetryPolicy().max_tries;
  ASSERT_EQ(service_.request_ids_.size(), tries);
  EXPECT_THAT(err_.str(),
              HasSubstr("--request-id " + service_.request_ids_[0]));
  EXPECT_EQ(waits_.size(), tries - 1);
}

TEST_F(CliTest, SubmitWithARequestIdPrintsAReplayedAnswerAsTheFirst) {
  SetSubmitted({5, 6});
  {
    absl::MutexLock lock(&service_.mu_);
    service_.submit_response_.set_replayed(true);
  }
  EXPECT_EQ(Run({"submit", spec_path_, "--request-id", "ci:812"}), kExitOk);
  EXPECT_EQ(out_.str(), "5\n6\n");
  EXPECT_THAT(err_.str(), HasSubstr("request ci:812 was submitted before"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_THAT(service_.request_ids_, ElementsAre("ci:812"));
}

TEST_F(CliTest, SubmitIsNotRetriedWhenTheCoordinatorAnswered) {
  for (grpc::StatusCode code :
       {grpc::StatusCode::ALREADY_EXISTS, grpc::StatusCode::INVALID_ARGUMENT}) {
    {
      absl::MutexLock lock(&service_.mu_);
      service_.submit_status_ = grpc::Status(code, "request id 'r' was used");
      service_.request_ids_.clear();
    }
    EXPECT_EQ(Run({"submit", spec_path_, "--request-id", "r"}), kExitRefused);
    EXPECT_THAT(err_.str(), HasSubstr("refused: request id 'r' was used"));
    absl::MutexLock lock(&service_.mu_);
    EXPECT_EQ(service_.request_ids_.size(), 1u);
  }
}

TEST_F(CliTest, SubmitToACoordinatorThatCannotStoreExitsUnavailableAtOnce) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.submit_status_ = ToGrpcStatus(
        WithCause(absl::UnavailableError("storing a submission: disk is full"),
                  v1::ErrorCause::CAUSE_STORE));
  }
  EXPECT_EQ(Run({"submit", spec_path_}), kExitUnavailable);
  EXPECT_THAT(err_.str(), HasSubstr("cannot store now: storing a submission: "
                                    "disk is full (retry later)"));
  EXPECT_TRUE(waits_.empty()) << err_.str();
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.request_ids_.size(), 1u);
}

TEST_F(CliTest, UnavailableWithoutTheStoreMarkIsTheConnectionsWhateverItSays) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.submit_status_ =
        grpc::Status(grpc::StatusCode::UNAVAILABLE, "database x: disk is full");
  }
  EXPECT_EQ(Run({"submit", spec_path_}), kExitUnavailable);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach the coordinator"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("cannot store now")));
  // Retried as a connection failure.
  EXPECT_EQ(waits_.size(), static_cast<size_t>(RetryPolicy().max_tries - 1));
}

TEST_F(CliTest, SubmitRefusesAMalformedRequestIdBeforeSending) {
  EXPECT_EQ(Run({"submit", spec_path_, "--request-id", "two words"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--request-id: request id 'two words'"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_TRUE(service_.request_ids_.empty());
}

TEST_F(CliTest, SubmitDashReadsTheSpecFromStdin) {
  SetSubmitted({5});
  in_.str("name: from-stdin\n");
  EXPECT_EQ(Run({"submit", "-"}), kExitOk);
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "name: from-stdin\n");
}

TEST_F(CliTest, SubmitWaitExitsZeroWhenTheRunReachedItsTarget) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true));
  EXPECT_EQ(Run({"submit", spec_path_, "--wait"}), kExitOk);
  std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("5\nrun 5: running\n"));
  EXPECT_THAT(out, HasSubstr("epoch 1: 2400 samples/s, accuracy 0.7900\n"));
  EXPECT_THAT(out, HasSubstr("run 5: succeeded\n"));
  EXPECT_THAT(out, HasSubstr("quality      0.8500 / 0.8000 (reached)"));
  EXPECT_THAT(out, HasSubstr("FLOPS        2.00 GFLOPS"));
  EXPECT_THAT(out, HasSubstr("Valid FLOPS  1.50 GFLOPS"));
  // "running" is printed once, not for every update in that state.
  EXPECT_EQ(out.find("running"), out.rfind("running"));
}

TEST_F(CliTest, SubmitWaitExitsOneWhenBelowTarget) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.5, /*reached=*/false));
  EXPECT_EQ(Run({"submit", "--wait", spec_path_}), kExitBelowTarget);
  EXPECT_THAT(out_.str(), HasSubstr("(below target)"));
}

TEST_F(CliTest, SubmitWaitExitsTwoWhenFailedOrCancelled) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_FAILED, 0, false));
  EXPECT_EQ(Run({"submit", spec_path_, "--wait"}), kExitFailed);
  EXPECT_THAT(out_.str(),
              HasSubstr("run 5 failed: worker rank 1 exited with code 3"));

  SetWatch(FinishedRun(5, v1::RUN_STATE_CANCELLED, 0, false));
  EXPECT_EQ(Run({"submit", spec_path_, "--wait"}), kExitFailed);
}

TEST_F(CliTest, SubmitWaitWatchesEveryRepetitionAndReturnsTheWorst) {
  SetSubmitted({5, 6});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.5, /*reached=*/false));
  SetWatch(FinishedRun(6, v1::RUN_STATE_SUCCEEDED, 0.9, /*reached=*/true));
  EXPECT_EQ(Run({"submit", spec_path_, "--wait"}), kExitBelowTarget);
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.watched_, (std::vector<int64_t>{5, 6}));
}

TEST_F(CliTest, RefusedSpecExitsThreeAndPrintsTheServersReason) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.submit_status_ =
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                     "field 'batch_size': must be between 1 and 65536, got 0");
  }
  EXPECT_EQ(Run({"submit", spec_path_, "--wait"}), kExitRefused);
  EXPECT_THAT(err_.str(),
              HasSubstr("field 'batch_size': must be between 1 and 65536, "
                        "got 0"));
  EXPECT_THAT(err_.str(), HasSubstr(spec_path_));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(CliTest, UnreadableSpecNamesTheFile) {
  std::string missing = (dir_ / "missing.yaml").string();
  EXPECT_EQ(Run({"submit", missing}), kExitNoInput);
  EXPECT_THAT(err_.str(), HasSubstr("cannot read spec file '" + missing +
                                    "': No such file or directory"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, TokenFileIsSentAsBearerAuthorization) {
  SetSubmitted({5});
  std::string token_path = (dir_ / "token").string();
  std::ofstream(token_path) << "s3cret\n";
  EXPECT_EQ(Run({"--token-file", token_path, "submit", spec_path_}), kExitOk);
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.authorization_, "Bearer s3cret");
}

TEST_F(CliTest, EmptyTokenFileIsRefused) {
  std::string token_path = (dir_ / "token").string();
  std::ofstream(token_path) << "\n";
  EXPECT_EQ(Run({"--token-file=" + token_path, "list"}), kExitNoInput);
  EXPECT_THAT(err_.str(), HasSubstr("is empty"));
}

TEST_F(CliTest, TokenComesFromFlagThenFileThenEnvironment) {
  SetSubmitted({5});
  std::string token_path = (dir_ / "token").string();
  std::ofstream(token_path) << "from-file\n";
  token_env_ = "from-env";
  auto sent = [&](std::vector<std::string> args) {
    EXPECT_EQ(Run(args), kExitOk) << err_.str();
    absl::MutexLock lock(&service_.mu_);
    return service_.authorization_;
  };
  EXPECT_EQ(sent({"--token", "inline", "submit", spec_path_}), "Bearer inline");
  EXPECT_EQ(sent({"submit", spec_path_, "--token-file", token_path}),
            "Bearer from-file");
  EXPECT_EQ(sent({"submit", spec_path_}), "Bearer from-env");
}

TEST_F(CliTest, TokenAndTokenFileTogetherAreAUsageError) {
  EXPECT_EQ(Run({"--token", "t", "--token-file", "f", "list"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--token excludes --token-file"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, UnreadableTokenFileExits66NamingTheFlagAndPath) {
  const std::string missing = (dir_ / "missing").string();
  EXPECT_EQ(Run({"--token-file", missing, "list"}), kExitNoInput);
  EXPECT_THAT(err_.str(),
              HasSubstr("--token-file " + missing + ": cannot read"));
}

TEST_F(CliTest, UnreadableTlsCaExits66BeforeConnecting) {
  const std::string missing = (dir_ / "missing-ca.pem").string();
  EXPECT_EQ(Run({"--tls-ca", missing, "list"}), kExitNoInput);
  EXPECT_THAT(err_.str(), HasSubstr("--tls-ca " + missing + ": cannot read"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, WatchEndingWithoutAFinalUpdateIsAFailure) {
  {
    absl::MutexLock lock(&service_.mu_);
    std::vector<v1::RunUpdate> updates =
        UpdatesEndingAs(FinishedRun(7, v1::RUN_STATE_SUCCEEDED, 0.9, true));
    updates.pop_back();
    service_.updates_[7] = updates;
  }
  EXPECT_EQ(Run({"watch", "7"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("closed the stream before the run ended"));
}

TEST_F(CliTest, WatchOfAnUnknownRunNamesTheCoordinator) {
  coordinator_env_ = "10.0.0.9:7500";
  EXPECT_EQ(Run({"watch", "99"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("coordinator 10.0.0.9:7500"));
  EXPECT_THAT(err_.str(), HasSubstr("no such run"));
}

TEST_F(CliTest, LeaderboardPrintsARankedTable) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::LeaderboardRow* first = service_.leaderboard_.add_rows();
    first->set_rank(1);
    first->set_system("cluster-a");
    first->set_name("fmnist");
    first->set_config("fashion_mnist");
    first->set_valid_flops(1.234e12);
    first->set_quality(0.9123);
    first->set_target(0.9);
    first->set_runs(3);
    first->set_ranked(true);
    first->set_throughput_cv(0.031);
    first->set_unrepeatable(true);
    first->mutable_convergence()->set_verdict("normalized");
    first->mutable_convergence()->set_factor(1.08);
    service_.leaderboard_.set_throughput_cv_limit(0.02);
    service_.leaderboard_.set_epochs_to_target_cv_limit(0.10);
    v1::LeaderboardRow* second = service_.leaderboard_.add_rows();
    second->set_rank(0);
    second->set_system("local-cpu");
    second->set_name("fmnist-smoke");
    second->set_config("fashion_mnist_smoke");
    second->set_valid_flops(45.6e9);
    second->set_quality(0.81);
    second->set_target(0.8);
    second->set_runs(1);
    second->set_ranked(false);
  }
  EXPECT_EQ(Run({"leaderboard", "--workload", "image_classification",
                 "--config=fashion_mnist"}),
            kExitOk);
  EXPECT_EQ(out_.str(),
            "rank  system     name          config                Valid FLOPS"
            "  quality / target  runs  spread  convergence       status\n"
            "   1  cluster-a  fmnist        fashion_mnist         1.23 TFLOPS"
            "   0.9123 / 0.9000     3  3.1% !  normalized /1.08  ranked\n"
            "   -  local-cpu  fmnist-smoke  fashion_mnist_smoke  45.60 GFLOPS"
            "   0.8100 / 0.8000     1       -  -                 unranked\n"
            "\n! unrepeatable: the repetitions' throughput varies by more "
            "than 2.0% (or epochs to target by more than 10.0%)\n"
            "\n/F: Valid FLOPS normalised by the convergence check: the "
            "submission converged F times faster than the reference (in "
            "epochs to target), so its runs' Valid FLOPS is divided by F\n");
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.leaderboard_requests_.size(), 1u);
  EXPECT_EQ(service_.leaderboard_requests_[0].workload(),
            "image_classification");
  EXPECT_EQ(service_.leaderboard_requests_[0].config(), "fashion_mnist");
}

TEST_F(CliTest, LeaderboardPrintsOneTablePerWorkload) {
  {
    absl::MutexLock lock(&service_.mu_);
    int rank = 0;
    for (const char* workload :
         {"extreme_weather", "extreme_weather", "image_classification"}) {
      v1::LeaderboardRow* row = service_.leaderboard_.add_rows();
      row->set_workload(workload);
      row->set_rank(workload[0] == 'e' ? ++rank : 1);
      row->set_name(std::string(workload).substr(0, 3) + "-" +
                    std::to_string(row->rank()));
      row->set_ranked(true);
      row->set_runs(1);
    }
  }
  EXPECT_EQ(Run({"leaderboard"}), kExitOk);
  const std::string out = out_.str();
  const size_t ewa = out.find("extreme_weather\nrank ");
  const size_t ic = out.find("\n\nimage_classification\nrank ");
  ASSERT_NE(ewa, std::string::npos) << out;
  ASSERT_NE(ic, std::string::npos) << out;
  // Each table holds only its workload's rows.
  EXPECT_LT(out.find("ext-1"), ic);
  EXPECT_LT(out.find("ext-2"), ic);
  EXPECT_GT(out.find("ima-1"), ic);
  EXPECT_EQ(out.find("rank "), ewa + sizeof("extreme_weather"));
}

TEST_F(CliTest, LeaderboardJsonUsesProtoFieldNames) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.leaderboard_.add_rows()->set_valid_flops(2e9);
  }
  EXPECT_EQ(Run({"leaderboard", "--json"}), kExitOk);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["rows"][0]["valid_flops"], 2e9);
  EXPECT_EQ(json["rows"][0]["ranked"], false);
}

TEST_F(CliTest, ShowPrintsASummaryOrJson) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] =
        FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
  }
  EXPECT_EQ(Run({"show", "4"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("run 4 (submission 1, repetition 0): "
                                    "succeeded\n"));
  EXPECT_THAT(out_.str(), HasSubstr("workload     image_classification/"
                                    "fashion_mnist_smoke\n"));
  EXPECT_THAT(out_.str(), HasSubstr("Valid FLOPS  1.50 GFLOPS (n = 5; before "
                                    "the leaderboard's convergence check)"));

  EXPECT_EQ(Run({"show", "4", "--json"}), kExitOk);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["id"], "4");
  EXPECT_EQ(json["state"], "RUN_STATE_SUCCEEDED");
  EXPECT_EQ(json["score"]["reached_target"], true);
}

TEST_F(CliTest, ShowListsTheInventoryOfEachAttemptsNodes) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::Run run =
        FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
    for (int number = 1; number <= 2; ++number) {
      v1::Attempt* attempt = run.add_attempts();
      attempt->set_number(number);
      attempt->set_state(number == 1 ? "lost" : "succeeded");
      attempt->add_nodes(number == 1 ? "node-b" : "node-c");
      attempt->add_nodes("node-a");
      for (const std::string& node : attempt->nodes()) {
        v1::Inventory& inventory = (*attempt->mutable_inventory())[node];
        inventory.set_cpu_model("Intel Xeon Gold 6338");
        inventory.set_cpu_cores(64);
        (*inventory.mutable_versions())["hpcai500"] = "0.1.0";
        (*inventory.mutable_versions())["kernel"] = "6.1.0-18-amd64";
      }
    }
    service_.runs_[4] = run;
  }
  ASSERT_EQ(Run({"show", "4"}), kExitOk);
  const std::string line =
      "Intel Xeon Gold 6338 (64 cores); hpcai500 0.1.0, kernel 6.1.0-18-amd64";
  EXPECT_THAT(out_.str(),
              HasSubstr(absl::StrCat("provenance\n"
                                     "attempt  node    inventory\n"
                                     "      1  node-b  ",
                                     line, "\n      1  node-a  ", line,
                                     "\n      2  node-c  ", line,
                                     "\n      2  node-a  ", line, "\n")))
      << out_.str();
}

TEST_F(CliTest, ShowPrintsEnergyAndValidFlopsPerWattWhenMeasured) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::Run measured =
        FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
    measured.mutable_score()->set_train_seconds(12);
    measured.mutable_score()->set_energy_joules(5400);
    measured.mutable_score()->set_valid_flops_per_watt(3.33e6);
    service_.runs_[4] = measured;
    service_.runs_[7] =
        FinishedRun(7, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
  }
  ASSERT_EQ(Run({"show", "4"}), kExitOk);
  EXPECT_THAT(out_.str(),
              HasSubstr("  energy       5400.0 J (450.0 W average over "
                        "12.00 s)\n"
                        "  per watt     3.33 MFLOPS/W (Valid FLOPS / average "
                        "power)\n"));
  // A machine without energy counters: no energy lines at all.
  ASSERT_EQ(Run({"show", "7"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("Valid FLOPS  1.50 GFLOPS"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("energy")));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("per watt")));
}

TEST_F(CliTest, WatchPrintsTheLogBeforeTheStateItLedTo) {
  // The watch began after the run was placed: its first snapshot is STARTING
  // and carries the "queued" line from before.
  std::vector<v1::RunUpdate> updates(2);
  updates[0].mutable_run()->set_id(5);
  updates[0].mutable_run()->set_state(v1::RUN_STATE_STARTING);
  updates[0].add_log("queued: image_classification/fashion_mnist_smoke");
  updates[0].add_log("attempt 1: placed on node-a");
  *updates[1].mutable_run() =
      FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
  updates[1].add_log("epoch 1/1 done");
  updates[1].set_final(true);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.updates_[5] = updates;
  }
  EXPECT_EQ(Run({"watch", "5"}), kExitOk);
  const std::string out = out_.str();
  const size_t queued = out.find("queued: image_classification");
  const size_t placed = out.find("attempt 1: placed on node-a");
  const size_t starting = out.find("run 5: starting");
  const size_t epoch = out.find("epoch 1/1 done");
  const size_t succeeded = out.find("run 5: succeeded");
  ASSERT_NE(queued, std::string::npos) << out;
  ASSERT_NE(starting, std::string::npos) << out;
  ASSERT_NE(succeeded, std::string::npos) << out;
  EXPECT_LT(queued, placed) << out;
  EXPECT_LT(placed, starting) << out;
  EXPECT_LT(starting, epoch) << out;
  EXPECT_LT(epoch, succeeded) << out;
}

TEST_F(CliTest, ListAndNodesPrintTables) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_FAILED, 0, false);
    service_.runs_[4].set_user("alice");
    v1::Node* node = service_.nodes_.add_nodes();
    node->set_name("node-a");
    node->set_address("10.0.0.2");
    node->set_slots(2);
    node->set_used_slots(1);
    node->set_connected(true);
    (*node->mutable_labels())["rack"] = "r1";
  }
  EXPECT_EQ(Run({"list"}), kExitOk);
  EXPECT_EQ(out_.str(),
            "id  name          workload/config                           "
            "state   user   created\n"
            " 4  fmnist-smoke  image_classification/fashion_mnist_smoke  "
            "failed  alice  2023-11-14 22:13:20\n");
  EXPECT_EQ(Run({"nodes"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("node-a  10.0.0.2    1/2"));
  EXPECT_THAT(out_.str(), HasSubstr("connected  -        -       -          "
                                    "rack=r1"));
}

TEST_F(CliTest, ListPrintsJsonWithTheFlag) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_FAILED, 0, false);
    service_.runs_[5] = FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0, false);
  }
  EXPECT_EQ(Run({"list", "--json"}), kExitOk);
  const nlohmann::json listed = nlohmann::json::parse(out_.str());
  ASSERT_EQ(listed["runs"].size(), 2u) << out_.str();
  std::map<std::string, std::string> states;  // id (int64 as text) -> state
  for (const auto& run : listed["runs"]) states[run["id"]] = run["state"];
  EXPECT_EQ(states["4"], "RUN_STATE_FAILED");
  EXPECT_EQ(states["5"], "RUN_STATE_SUCCEEDED");
}

TEST_F(CliTest, NodesShowStateReasonDevicesAndDriverOrJson) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::Node* gpu = service_.nodes_.add_nodes();
    gpu->set_name("gpu-1");
    gpu->set_slots(2);
    gpu->set_gpus(2);
    gpu->set_state("drained");
    gpu->set_state_reason("fan replaced");
    v1::Inventory* inventory = gpu->mutable_inventory();
    inventory->set_driver_version("550.54.15");
    for (int i = 0; i < 2; ++i) {
      v1::Device* device = inventory->add_devices();
      device->set_index(i);
      device->set_model("NVIDIA H200");
      device->set_memory_bytes(int64_t{141} << 30);
    }
    v1::Node* cpu = service_.nodes_.add_nodes();
    cpu->set_name("cpu-1");
    cpu->set_slots(1);
    cpu->set_state("idle");
    cpu->mutable_inventory()->set_cpu_model("Intel Xeon Gold 6338");
    cpu->mutable_inventory()->set_cpu_cores(64);
  }
  EXPECT_EQ(Run({"nodes"}), kExitOk);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("state    devices"));
  EXPECT_THAT(out, HasSubstr("drained  2x NVIDIA H200 141GiB"));
  EXPECT_THAT(out, HasSubstr("550.54.15"));
  EXPECT_THAT(out, HasSubstr("idle     Intel Xeon Gold 6338 (64 cores)"));
  EXPECT_THAT(out, HasSubstr("reason\n"));
  EXPECT_THAT(out, HasSubstr("  fan replaced\n"));

  EXPECT_EQ(Run({"nodes", "--json"}), kExitOk);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["nodes"][0]["state_reason"], "fan replaced");
  EXPECT_EQ(json["nodes"][0]["inventory"]["devices"][1]["model"],
            "NVIDIA H200");
  EXPECT_EQ(json["nodes"][1]["inventory"]["cpu_cores"], 64);
}

TEST_F(CliTest, InvalidateSendsTheReasonAndNeedsOne) {
  EXPECT_EQ(Run({"invalidate", "7"}), kExitUsage);  // --reason is required
  EXPECT_EQ(Run({"invalidate", "7", "--reason", "bad clock"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("run 7: result invalidated by root"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.invalidate_request_.run_id(), 7);
  EXPECT_EQ(service_.invalidate_request_.reason(), "bad clock");
}

TEST_F(CliTest, AuditPrintsWhoDidWhatAndTheVerdict) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::AuditEntry* e = service_.audit_.add_entries();
    e->set_time_ms(1'700'000'000'000);
    e->set_user("bob");
    e->set_role("operator");
    e->set_action("cancel");
    e->set_target("run 4");
    e->set_peer("ipv4:10.0.0.9:5000");
    e->set_detail("it belongs to alice");
  }
  EXPECT_EQ(Run({"audit", "--limit", "5"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("bob   operator  cancel  run 4"));
  EXPECT_THAT(out_.str(), HasSubstr("refused  it belongs to alice"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.audit_limit_, 5);
}

TEST_F(CliTest, ListSendsItsFiltersAndPrintsWhatMatches) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_FAILED, 0, false);
    service_.runs_[5] = FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.9, true);
  }
  EXPECT_EQ(Run({"list", "--name", "fmnist-smoke", "--workload",
                 "image_classification", "--config=fashion_mnist_smoke",
                 "--state", "failed", "--limit", "7"}),
            kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr(" 4  fmnist-smoke"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("succeeded")));
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.list_requests_.size(), 1u);
  const v1::ListRunsRequest& request = service_.list_requests_[0];
  EXPECT_EQ(request.name(), "fmnist-smoke");
  EXPECT_EQ(request.workload(), "image_classification");
  EXPECT_EQ(request.config(), "fashion_mnist_smoke");
  EXPECT_EQ(request.state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(request.limit(), 7);
}

TEST_F(CliTest, ListOverAPageAsksForTheRestBeforeTheOldestSeen) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id = 1; id <= 250; ++id) {
      service_.runs_[id] = FinishedRun(id, v1::RUN_STATE_SUCCEEDED, 0.9, true);
    }
  }
  EXPECT_EQ(Run({"list", "--limit", "230"}), kExitOk);
  const std::string out = out_.str();
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 231);  // + header
  EXPECT_THAT(out, HasSubstr("\n250  "));
  EXPECT_THAT(out, HasSubstr("\n 21  "));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("\n 20  ")));
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.list_requests_.size(), 3u);
  EXPECT_EQ(service_.list_requests_[0].before_id(), 0);
  EXPECT_EQ(service_.list_requests_[1].before_id(), 151);
  EXPECT_EQ(service_.list_requests_[2].before_id(), 51);
  EXPECT_EQ(service_.list_requests_[2].limit(), 30);
}

TEST_F(CliTest, ListBadFilterExits64NamingIt) {
  EXPECT_EQ(Run({"list", "--state", "done"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--state: unknown state 'done' "
                                    "(expected: queued, starting, running, "
                                    "succeeded, failed, cancelled, "
                                    "aborted)"));
  EXPECT_EQ(Run({"list", "--limit", "0"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--limit must be an integer between 1 "
                                    "and 10000, got '0'"));
  EXPECT_EQ(Run({"submit", "s.yaml", "--name", "x"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("'submit' does not take '--name'"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, LeaderboardSendsItsPageAndSaysWhichRowsItShows) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int rank = 1; rank <= 10; ++rank) {
      v1::LeaderboardRow* row = service_.leaderboard_.add_rows();
      row->set_rank(rank);
      row->set_ranked(true);
      row->set_system(absl::StrCat("system-", rank));
      row->set_workload("image_classification");
    }
  }
  EXPECT_EQ(Run({"leaderboard", "--limit", "2", "--offset", "4"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("system-5"));
  EXPECT_THAT(out_.str(), HasSubstr("system-6"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("system-7")));
  EXPECT_THAT(out_.str(), HasSubstr("\nrows 5-6 of 10 (--offset, --limit)\n"));
  {
    absl::MutexLock lock(&service_.mu_);
    ASSERT_EQ(service_.leaderboard_requests_.size(), 1u);
    EXPECT_EQ(service_.leaderboard_requests_[0].limit(), 2);
    EXPECT_EQ(service_.leaderboard_requests_[0].offset(), 4);
  }
  EXPECT_EQ(Run({"leaderboard", "--offset", "40"}), kExitOk);
  EXPECT_EQ(out_.str(), "no rows after the first 40 (of 10)\n");
  EXPECT_EQ(Run({"leaderboard", "--offset", "-1"}), kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("--offset must be a non-negative integer, got '-1'"));
}

TEST_F(CliTest, LeaderboardOfEveryRowAsksInPagesOfAThousand) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int rank = 1; rank <= 2500; ++rank) {
      v1::LeaderboardRow* row = service_.leaderboard_.add_rows();
      row->set_rank(rank);
      row->set_submission_id(rank);
    }
  }
  EXPECT_EQ(Run({"leaderboard", "--json"}), kExitOk);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["rows"].size(), 2500u);
  EXPECT_EQ(json["total"], 2500);
  EXPECT_EQ(json["rows"][2499]["submission_id"], "2500");  // int64: a string
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.leaderboard_requests_.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(service_.leaderboard_requests_[i].limit(), 1000);
    EXPECT_EQ(service_.leaderboard_requests_[i].offset(), 1000 * i);
  }
}

TEST_F(CliTest, HistorySendsItsFiltersAndPrintsOneRowPerRun) {
  {
    absl::MutexLock lock(&service_.mu_);
    v1::Run run = FinishedRun(9, v1::RUN_STATE_FAILED, 0, false);
    run.clear_error();  // the last attempt's error says why it ended
    run.set_user("alice");
    run.set_queue("gpu");
    run.set_started_ms(run.created_ms() + 1000);
    run.set_finished_ms(run.created_ms() + 1000 + 3'600'000);
    v1::Attempt* attempt = run.add_attempts();
    attempt->add_nodes("node-a");
    attempt->add_nodes("node-b");
    attempt->set_started_ms(run.started_ms());
    attempt->set_finished_ms(run.finished_ms());
    attempt->set_error("rank 1 exited 3");
    service_.runs_[9] = run;
  }
  EXPECT_EQ(Run({"history", "--user", "alice", "--state", "failed", "--since",
                 "2026-12-01", "--until", "2026-12-02T12:00", "--name",
                 "fmnist-smoke", "--queue", "gpu", "--limit", "5"}),
            kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("node-hours"));
  EXPECT_THAT(
      out_.str(),
      HasSubstr("9  fmnist-smoke  alice  gpu    node-a,node-b  failed"));
  EXPECT_THAT(out_.str(), HasSubstr("01:00:00        2.00      -         1  "
                                    "rank 1 exited 3\n"));
  {
    absl::MutexLock lock(&service_.mu_);
    ASSERT_EQ(service_.list_requests_.size(), 1u);
    const v1::ListRunsRequest& request = service_.list_requests_[0];
    EXPECT_EQ(request.user(), "alice");
    EXPECT_EQ(request.queue(), "gpu");
    EXPECT_EQ(request.name(), "fmnist-smoke");
    EXPECT_EQ(request.state(), v1::RUN_STATE_FAILED);
    EXPECT_EQ(request.since_ms(), 1796083200000);  // 2026-12-01T00:00Z
    EXPECT_EQ(request.until_ms(), 1796212800000);  // 2026-12-02T12:00Z
    EXPECT_EQ(request.limit(), 5);
  }
  EXPECT_EQ(Run({"history", "--json"}), kExitOk);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["run_id"], 9);
  EXPECT_EQ(json[0]["exit_reason"], "rank 1 exited 3");

  EXPECT_EQ(Run({"history", "--since", "last week"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--since: 'last week' is not a time"));
  EXPECT_EQ(Run({"history", "--since", "1d", "--until", "2d"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--until '2d' is not after --since '1d'"));
}

TEST_F(CliTest, CancelPrintsTheNewState) {
  EXPECT_EQ(Run({"cancel", "12"}), kExitOk);
  EXPECT_EQ(out_.str(), "run 12: cancelled\n");
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.cancelled_, 12);
}

TEST_F(CliTest, CoordinatorComesFromFlagThenEnvironmentThenDefault) {
  EXPECT_EQ(Run({"list"}), kExitOk);
  EXPECT_EQ(connected_to_, "127.0.0.1:7500");
  coordinator_env_ = "env-host:1234";
  EXPECT_EQ(Run({"list"}), kExitOk);
  EXPECT_EQ(connected_to_, "env-host:1234");
  EXPECT_EQ(Run({"list", "--coordinator", "flag-host:99"}), kExitOk);
  EXPECT_EQ(connected_to_, "flag-host:99");
}

TEST_F(CliTest, UsageErrorsExit64WithUsageOnStderr) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"frobnicate"},
      {"list", "--bogus"},
      {"list", "-x"},
      {"list", "--wait"},
      {"list", "extra"},
      {"submit"},
      {"submit", "a.yaml", "b.yaml"},
      {"show", "abc"},
      {"cancel", "-5"},
      {"watch", "0"},
      {"list", "--coordinator"},
      {"list", "--coordinator="},
      {"submit", "x.yaml", "--wait=yes"},
      {"leaderboard", "--json", "--json"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& arg : args) joined += arg + " ";
    EXPECT_EQ(Run(args), kExitUsage) << joined;
    EXPECT_THAT(err_.str(), HasSubstr("usage: hpcai500")) << joined;
    EXPECT_EQ(out_.str(), "") << joined;
    EXPECT_EQ(connected_to_, "") << joined;
  }
}

TEST_F(CliTest, UsageErrorNamesTheProblem) {
  Run({"list", "--wait"});
  EXPECT_THAT(err_.str(), HasSubstr("'list' does not take '--wait'"));
  Run({"frobnicate"});
  EXPECT_THAT(err_.str(), HasSubstr("unknown command 'frobnicate'"));
  // With an argument too (`hpcai500 frobnicate x.yaml`): a usage error, never
  // 0.
  EXPECT_EQ(Run({"frobnicate", "x.yaml"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown command 'frobnicate'"));
  Run({"show", "abc"});
  EXPECT_THAT(err_.str(), HasSubstr("expected a run id"));
}

TEST_F(CliTest, CommandFlagBeforeItsCommandIsAUsageError) {
  EXPECT_EQ(Run({"--json", "show", "4"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("flag '--json' goes after its command"));
  EXPECT_EQ(Run({"list", "--bogus=1"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag '--bogus'"));
  EXPECT_EQ(Run({"list", "--workload="}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--workload"));
  EXPECT_EQ(Run({"--coordinator", "a:1", "list", "--coordinator", "b:2"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("flag '--coordinator' given twice"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, HelpPrintsUsageOnStdout) {
  EXPECT_EQ(Run({"--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("usage: hpcai500"));
  EXPECT_EQ(Run({"help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("leaderboard"));
}

// `COMMAND --help` prints that command's usage, also where the command
// requires a flag; an unknown command with --help is still a usage error.
TEST_F(CliTest, HelpOfACommandPrintsItsUsageEvenWithoutItsRequiredFlags) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"drain", "--help"},
        std::vector<std::string>{"drain", "node-a", "-h"},
        std::vector<std::string>{"invalidate", "--help"}}) {
    out_.str("");
    err_.str("");
    EXPECT_EQ(Run(args), kExitOk) << args[0] << ": " << err_.str();
    EXPECT_THAT(out_.str(), HasSubstr("--reason TEXT")) << args[0];
    EXPECT_THAT(out_.str(), Not(HasSubstr("leaderboard [--workload")));
    EXPECT_EQ(err_.str(), "");
  }
  out_.str("");
  EXPECT_EQ(Run({"release", "--help"}), kExitOk);  // described with hold
  EXPECT_THAT(out_.str(), HasSubstr("hold RUN, release RUN"));
  EXPECT_EQ(Run({"drain", "node-a"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("'drain' needs --reason"));
  out_.str("");
  err_.str("");
  EXPECT_EQ(Run({"bogus", "--help"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown command 'bogus'"));
  EXPECT_EQ(out_.str(), "");
  err_.str("");
  EXPECT_EQ(Run({"token", "create", "--help"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("hpcai500d token --help"));
  EXPECT_EQ(connected_to_, "");
}

TEST_F(CliTest, RegressComparesWithTheSeriesAndWritesJUnit) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id : {1, 2, 3}) {
      v1::Run earlier =
          FinishedRun(id, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true);
      earlier.mutable_score()->set_valid_flops(id == 2 ? 9e9 : 1.5e9);
      service_.runs_[id] = earlier;
    }
    // Another benchmark's run is no part of the series.
    v1::Run other = FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, true);
    other.mutable_spec()->set_name("other");
    other.mutable_score()->set_valid_flops(1e3);
    service_.runs_[4] = other;
  }
  SetSubmitted({5});
  v1::Run now = FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, true);
  now.mutable_score()->set_valid_flops(1.0e9);  // -33% from the median 1.5e9
  SetWatch(now);
  const std::string junit = (dir_ / "regress.xml").string();
  EXPECT_EQ(
      Run({"regress", spec_path_, "--metric", "valid_flops", "--junit", junit}),
      kExitRegressed);
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("5\nrun 5: running\n"));  // submit --wait's
  EXPECT_THAT(out, HasSubstr("runs 3, 2, 1"));
  EXPECT_THAT(out, HasSubstr("REGRESSED valid_flops: dropped 33.3%"));
  std::string xml;
  std::getline(std::ifstream(junit), xml, '\0');
  EXPECT_THAT(xml, HasSubstr("<failure message=\"valid_flops dropped 33.3%"));

  {  // The coordinator was asked for the series' earlier successes only.
    absl::MutexLock lock(&service_.mu_);
    ASSERT_EQ(service_.list_requests_.size(), 1u);
    const v1::ListRunsRequest& request = service_.list_requests_[0];
    EXPECT_EQ(request.name(), "fmnist-smoke");
    EXPECT_EQ(request.workload(), "image_classification");
    EXPECT_EQ(request.config(), "fashion_mnist_smoke");
    EXPECT_EQ(request.state(), v1::RUN_STATE_SUCCEEDED);
    EXPECT_EQ(request.before_id(), 5);
  }

  // A generous tolerance passes the same run.
  EXPECT_EQ(Run({"regress", spec_path_, "--tolerance=50"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("no regression (tolerance 50%)"));
}

TEST_F(CliTest, RegressStopsPagingOnceItHasTheWindow) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id = 1; id <= 300; ++id) {
      v1::Run earlier = FinishedRun(id, v1::RUN_STATE_SUCCEEDED, 0.85, true);
      // Only every 150th run has the series' shape.
      if (id % 150 != 0) earlier.mutable_spec()->set_nodes(2);
      service_.runs_[id] = earlier;
    }
  }
  SetSubmitted({301});
  SetWatch(FinishedRun(301, v1::RUN_STATE_SUCCEEDED, 0.85, true));
  EXPECT_EQ(Run({"regress", spec_path_, "--window", "1"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("run 300"));
  {
    absl::MutexLock lock(&service_.mu_);
    EXPECT_EQ(service_.list_requests_.size(), 1u);
    service_.list_requests_.clear();
  }
  EXPECT_EQ(Run({"regress", spec_path_, "--window", "2"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("runs 300, 150"));
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.list_requests_.size(), 2u);
  EXPECT_EQ(service_.list_requests_[1].before_id(), 201);
}

TEST_F(CliTest, RegressWithoutEarlierRunsStartsTheSeries) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.5, /*reached=*/false));
  EXPECT_EQ(Run({"regress", spec_path_}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("no baseline: run 5 starts the series"));
}

TEST_F(CliTest, RegressJsonKeepsStdoutForTheReport) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, /*reached=*/true));
  EXPECT_EQ(
      Run({"regress", spec_path_, "--json", "--reference", "throughput=1e12"}),
      kExitRegressed);
  nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["run_ids"][0], 5);
  EXPECT_EQ(json["metrics"][0]["verdict"], "regressed");
  EXPECT_THAT(err_.str(), HasSubstr("run 5: succeeded"));
}

TEST_F(CliTest, RegressOfAFailedRunExitsTwoAndReportsTheError) {
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_FAILED, 0, false));
  const std::string junit = (dir_ / "regress.xml").string();
  EXPECT_EQ(Run({"regress", spec_path_, "--junit", junit}), kExitFailed);
  EXPECT_THAT(out_.str(), HasSubstr("run 5 failed: worker rank 1 exited with "
                                    "code 3: nothing compared"));
  std::string xml;
  std::getline(std::ifstream(junit), xml, '\0');
  EXPECT_THAT(xml, HasSubstr("<error message=\"run 5 failed"));
}

TEST_F(CliTest, RegressAgainstAnUnfinishedBaselineRunSubmitsNothing) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_CANCELLED, 0, false);
  }
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline", "4"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("baseline run 4 is cancelled; a baseline "
                                    "must be a finished run with a score"));
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline", "77"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("baseline run 77"));
  EXPECT_THAT(err_.str(), HasSubstr("no such run"));
  {
    absl::MutexLock lock(&service_.mu_);
    v1::Run invalidated = FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, true);
    invalidated.set_invalidated_by("root");
    invalidated.set_invalidation_reason("wrong driver");
    service_.runs_[5] = invalidated;
  }
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline", "5"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("baseline run 5's result was invalidated "
                                    "by root (wrong driver)"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, RegressSuiteJudgesEachSpecAndWritesEveryReport) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id : {1, 2}) {
      v1::Run earlier = FinishedRun(id, v1::RUN_STATE_SUCCEEDED, 0.85, true);
      if (id == 2) earlier.mutable_spec()->set_name("ewa-smoke");
      service_.runs_[id] = earlier;
    }
  }
  SetSubmitted({5, 6});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, true));
  v1::Run slowed = FinishedRun(6, v1::RUN_STATE_SUCCEEDED, 0.85, true);
  slowed.set_submission_id(2);
  slowed.mutable_spec()->set_name("ewa-smoke");
  slowed.mutable_score()->set_valid_flops(0.5e9);
  SetWatch(slowed);
  const std::string suite = (dir_ / "suite.yaml").string();
  std::ofstream(suite) << "suite: nightly\nspecs:\n  - name: fmnist-smoke\n"
                          "  - name: ewa-smoke\n";
  const std::string junit = (dir_ / "r.xml").string();
  const std::string markdown = (dir_ / "r.md").string();
  const std::string json = (dir_ / "r.json").string();
  EXPECT_EQ(Run({"regress", suite, "--metric", "valid_flops", "--junit", junit,
                 "--markdown", markdown, "--json-file", json}),
            kExitRegressed);
  EXPECT_THAT(out_.str(), HasSubstr("\nfmnist-smoke\n"));
  EXPECT_THAT(out_.str(), HasSubstr("\newa-smoke\n"));
  std::string xml;
  std::getline(std::ifstream(junit), xml, '\0');
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"hpcai500 regress nightly\" "
                             "tests=\"2\" failures=\"1\""));
  EXPECT_THAT(xml, HasSubstr("classname=\"hpcai500.regress.ewa-smoke\" "
                             "name=\"valid_flops\">\n      <failure "));
  std::string md;
  std::getline(std::ifstream(markdown), md, '\0');
  EXPECT_THAT(md, HasSubstr("| ewa-smoke | valid_flops |"));
  EXPECT_THAT(md, HasSubstr("REGRESSED (1 of 2 verdicts)"));
  std::string written;
  std::getline(std::ifstream(json), written, '\0');
  nlohmann::json report = nlohmann::json::parse(written);
  EXPECT_EQ(report["suite"], "nightly");
  EXPECT_EQ(report["regressed"], true);
  ASSERT_EQ(report["specs"].size(), 2u);
  EXPECT_EQ(report["specs"][1]["baseline"]["run_ids"],
            nlohmann::json::array({2}));

  // That JSON file is a baseline: the same runs again match its values.
  EXPECT_EQ(
      Run({"regress", suite, "--metric", "valid_flops", "--baseline", json}),
      kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("500.00 MFLOPS  file"));
}

TEST_F(CliTest, RegressUsesAPromotedBaselineBeforeTheSeries) {
  {
    absl::MutexLock lock(&service_.mu_);
    for (int64_t id : {1, 2, 3}) {
      v1::Run earlier = FinishedRun(id, v1::RUN_STATE_SUCCEEDED, 0.85, true);
      earlier.mutable_score()->set_valid_flops(id == 1 ? 3e9 : 1.5e9);
      service_.runs_[id] = earlier;
    }
  }
  EXPECT_EQ(Run({"baseline", "promote", "1"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("run 1 is the regress baseline of its "
                                    "series now (promoted by alice)"));
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.85, true));
  EXPECT_EQ(Run({"regress", spec_path_, "--metric", "valid_flops"}),
            kExitRegressed);
  EXPECT_THAT(out_.str(), HasSubstr("promoted run 1"));
  EXPECT_THAT(out_.str(), HasSubstr("dropped 50.0%"));
  // --baseline last-good: the newest good run (3), as good as this one.
  EXPECT_EQ(Run({"regress", spec_path_, "--metric", "valid_flops", "--baseline",
                 "last-good"}),
            kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("last good run 3"));
}

TEST_F(CliTest, RegressWithAnUnreadableBaselineFileSubmitsNothing) {
  const std::string bad = (dir_ / "bad.json").string();
  std::ofstream(bad) << "{\"specs\": 1}";
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline", bad}), kExitNoInput);
  EXPECT_THAT(err_.str(), HasSubstr("\"specs\" is not an array"));
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline",
                 (dir_ / "missing.json").string()}),
            kExitNoInput);
  EXPECT_THAT(err_.str(), HasSubstr("cannot read baseline file"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, RegressAgainstOneRunComparesWithIt) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, true);
  }
  SetSubmitted({5});
  SetWatch(FinishedRun(5, v1::RUN_STATE_SUCCEEDED, 0.6, /*reached=*/false));
  EXPECT_EQ(Run({"regress", spec_path_, "--baseline=4", "--metric=quality"}),
            kExitRegressed);
  EXPECT_THAT(out_.str(), HasSubstr("0.8500  run 4"));
  EXPECT_THAT(out_.str(), HasSubstr("the baseline reached its target"));
}

TEST_F(CliTest, RegressOfASuiteAgainstOneRunIsRefusedBeforeSubmitting) {
  {
    absl::MutexLock lock(&service_.mu_);
    service_.runs_[4] = FinishedRun(4, v1::RUN_STATE_SUCCEEDED, 0.85, true);
  }
  const std::string suite = (dir_ / "suite.yaml").string();
  std::ofstream(suite) << "suite: nightly\nspecs:\n  - name: fmnist-smoke\n"
                          "  - name: ewa-smoke\n";
  EXPECT_EQ(Run({"regress", suite, "--baseline", "4"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--baseline 4 names one run, but '" +
                                    suite + "' is a suite of 2 specs"));
  absl::MutexLock lock(&service_.mu_);
  EXPECT_EQ(service_.submitted_yaml_, "");
}

TEST_F(CliTest, RegressBadFlagsExit64NamingTheProblem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"regress", "s.yaml", "--metric", "speed"}, "unknown metric 'speed'"},
      {{"regress", "s.yaml", "--reference", "throughput"},
       "--reference needs METRIC=VALUE"},
      {{"regress", "s.yaml", "--reference", "qualty=0.9"},
       "unknown metric 'qualty'"},
      {{"regress", "s.yaml", "--tolerance", "-1"},
       "--tolerance must be a percentage of at least 0"},
      {{"regress", "s.yaml", "--tolerance", "nan"},
       "--tolerance must be a percentage"},
      {{"regress", "s.yaml", "--window", "0"},
       "--window must be an integer of at least 1"},
      {{"regress", "s.yaml", "--baseline", "0"}, "--baseline: expected"},
      {{"regress", "s.yaml", "--min-history", "1"},
       "--min-history must be an integer of at least 2"},
      {{"baseline", "keep", "3"}, "'baseline' knows only 'promote'"},
      {{"baseline", "promote", "x"}, "expected a run id"},
      {{"regress", "s.yaml", "--window", "2", "--window", "3"},
       "flag '--window' given twice"},
      {{"regress"}, "'regress' needs SPEC"},
      {{"submit", "s.yaml", "--tolerance", "5"},
       "'submit' does not take '--tolerance'"},
  };
  for (const auto& [args, message] : cases) {
    EXPECT_EQ(Run(args), kExitUsage) << message;
    EXPECT_THAT(err_.str(), HasSubstr(message));
    EXPECT_EQ(connected_to_, "") << message;
  }
}

TEST(Cli, UnreachableCoordinatorExitsTwoNamingTheAddress) {
  // Port 1 on loopback: nothing listens there, the connection is refused.
  std::istringstream in;
  std::ostringstream out;
  std::ostringstream err;
  CliEnvironment env;
  env.in = &in;
  env.out = &out;
  env.err = &err;
  env.connect = [](const std::string& address,
                   const std::shared_ptr<grpc::ChannelCredentials>& credentials)
      -> std::unique_ptr<v1::ClientService::StubInterface> {
    return v1::ClientService::NewStub(
        grpc::CreateChannel(address, credentials));
  };
  EXPECT_EQ(RunCli({"--coordinator", "127.0.0.1:1", "watch", "5"}, env),
            kExitUnavailable);
  EXPECT_THAT(err.str(),
              HasSubstr("cannot reach the coordinator at 127.0.0.1:1"));
}

}  // namespace
}  // namespace hpcai500
