// A CoordinatorView over fixed data, recording what it was asked, for the
// HTTP tests.
#ifndef HPCAI500_TESTS_SERVER_HTTP_FAKE_COORDINATOR_VIEW_H_
#define HPCAI500_TESTS_SERVER_HTTP_FAKE_COORDINATOR_VIEW_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/http/coordinator_view.h"

namespace hpcai500 {

class FakeCoordinatorView : public CoordinatorView {
 public:
  absl::StatusOr<v1::Run> GetRun(int64_t run_id) override {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) {
      return absl::NotFoundError(absl::StrCat("no run ", run_id));
    }
    return it->second;
  }

  absl::StatusOr<v1::ListRunsResponse> ListRuns(
      const v1::ListRunsRequest& request) override {
    absl::MutexLock lock(&mu_);
    last_list_request_ = request;
    if (!list_error_.ok()) return list_error_;
    v1::ListRunsResponse response;
    for (auto it = runs_.rbegin(); it != runs_.rend(); ++it) {
      if (response.runs_size() >= request.limit()) break;
      *response.add_runs() = it->second;
    }
    return response;
  }

  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request) override {
    absl::MutexLock lock(&mu_);
    last_leaderboard_request_ = request;
    if (request.workload() == "no_such_workload") {
      return absl::InvalidArgumentError("unknown workload 'no_such_workload'");
    }
    return leaderboard_;
  }

  absl::StatusOr<v1::ListNodesResponse> ListNodes() override {
    absl::MutexLock lock(&mu_);
    return nodes_;
  }

  // Rank logs: "events of R/A/K" for a known run; NotFound for attempt 9.
  absl::StatusOr<std::string> RankLogText(int64_t run_id, int32_t attempt,
                                          int32_t rank, RankLog log) override {
    RETURN_IF_ERROR(GetRun(run_id).status());
    if (attempt == 9) return absl::NotFoundError("no attempt 9");
    return absl::StrCat(log == RankLog::kEvents ? "events" : "stderr", " of ",
                        run_id, "/", attempt, "/", rank, "\n");
  }

  absl::StatusOr<v1::RunRanksResponse> RunRanks(int64_t run_id) override {
    RETURN_IF_ERROR(GetRun(run_id).status());
    v1::RunRanksResponse response;
    response.set_run_id(run_id);
    response.set_target(0.7);
    v1::RankEpoch* row = response.add_epochs();
    row->set_rank(1);
    row->set_epoch(2);
    row->set_throughput(123.5);
    return response;
  }

  std::string MetricsText() override {
    return "# TYPE hpcai500_runs_queued gauge\nhpcai500_runs_queued 3\n";
  }

  // Reads need `required_token` when it is set; a request showing it reads,
  // any other is Unauthenticated.
  absl::Status AuthorizeRead(absl::string_view bearer) override {
    absl::MutexLock lock(&mu_);
    last_bearer_ = std::string(bearer);
    if (required_token_.empty() || bearer == required_token_) {
      return absl::OkStatus();
    }
    return absl::UnauthenticatedError("no or a wrong viewer token");
  }
  absl::Status Health() override {
    absl::MutexLock lock(&mu_);
    return health_;
  }
  void SetHealth(absl::Status health) {
    absl::MutexLock lock(&mu_);
    health_ = std::move(health);
  }
  void RequireToken(std::string token) {
    absl::MutexLock lock(&mu_);
    required_token_ = std::move(token);
  }
  std::string last_bearer() {
    absl::MutexLock lock(&mu_);
    return last_bearer_;
  }

  void AddRun(const v1::Run& run) {
    absl::MutexLock lock(&mu_);
    runs_[run.id()] = run;
  }
  void SetLeaderboard(const v1::LeaderboardResponse& leaderboard) {
    absl::MutexLock lock(&mu_);
    leaderboard_ = leaderboard;
  }
  void SetNodes(const v1::ListNodesResponse& nodes) {
    absl::MutexLock lock(&mu_);
    nodes_ = nodes;
  }
  void FailListRuns(absl::Status status) {
    absl::MutexLock lock(&mu_);
    list_error_ = std::move(status);
  }
  int last_limit() {
    absl::MutexLock lock(&mu_);
    return last_list_request_.limit();
  }
  v1::ListRunsRequest last_list_request() {
    absl::MutexLock lock(&mu_);
    return last_list_request_;
  }
  v1::LeaderboardRequest last_leaderboard_request() {
    absl::MutexLock lock(&mu_);
    return last_leaderboard_request_;
  }

 private:
  std::string required_token_ ABSL_GUARDED_BY(mu_);
  absl::Status health_ ABSL_GUARDED_BY(mu_);
  std::string last_bearer_ ABSL_GUARDED_BY(mu_);
  absl::Mutex mu_;
  std::map<int64_t, v1::Run> runs_ ABSL_GUARDED_BY(mu_);
  v1::LeaderboardResponse leaderboard_ ABSL_GUARDED_BY(mu_);
  v1::ListNodesResponse nodes_ ABSL_GUARDED_BY(mu_);
  absl::Status list_error_ ABSL_GUARDED_BY(mu_);
  v1::ListRunsRequest last_list_request_ ABSL_GUARDED_BY(mu_);
  v1::LeaderboardRequest last_leaderboard_request_ ABSL_GUARDED_BY(mu_);
};

// A finished, scored run of the smoke config.
inline v1::Run SampleRun(int64_t id) {
  v1::Run run;
  run.set_id(id);
  run.set_submission_id(id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_created_ms(1700000000000);
  v1::RunSpec* spec = run.mutable_spec();
  spec->set_name("fmnist-smoke");
  spec->set_workload("image_classification");
  spec->set_config("fashion_mnist_smoke");
  spec->set_level("system");
  spec->set_nodes(1);
  spec->set_ranks_per_node(2);
  spec->set_device("cpu");
  spec->set_batch_size(64);
  spec->set_precision("fp32");
  spec->set_seed(1);
  spec->set_system("local-cpu");
  spec->set_epochs(2);
  spec->set_repetitions(1);
  v1::EpochSummary* epoch = run.add_epochs();
  epoch->set_epoch(1);
  epoch->set_samples(6000);
  epoch->set_seconds(2.5);
  epoch->set_throughput(2400);
  epoch->set_accuracy(0.81);
  v1::Score* score = run.mutable_score();
  score->set_quality(0.81);
  score->set_target(0.8);
  score->set_exponent(5);
  score->set_flops(1.5e9);
  score->set_valid_flops(1.6e9);
  score->set_reached_target(true);
  return run;
}

}  // namespace hpcai500

#endif  // HPCAI500_TESTS_SERVER_HTTP_FAKE_COORDINATOR_VIEW_H_
