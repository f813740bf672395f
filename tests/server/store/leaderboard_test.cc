#include "server/store/leaderboard.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/store/reference_leaderboard.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;

// A run of submission `submission` that succeeded with `valid_flops`.
v1::Run ScoredRun(int64_t id, int64_t submission, double valid_flops,
                  const std::string& workload = "image_classification",
                  int repetitions = 1, bool ranked = true) {
  v1::Run run;
  run.set_id(id);
  run.set_submission_id(submission);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_finished_ms(1000 + id);
  v1::RunSpec* spec = run.mutable_spec();
  spec->set_name("s" + std::to_string(submission));
  spec->set_workload(workload);
  spec->set_config("cfg");
  spec->set_repetitions(repetitions);
  spec->set_ranked(ranked);
  run.mutable_score()->set_valid_flops(valid_flops);
  run.mutable_score()->set_flops(2 * valid_flops);
  run.mutable_score()->set_quality(0.8);
  run.mutable_score()->set_target(0.7);
  return run;
}

std::vector<int64_t> SubmissionIds(const v1::LeaderboardResponse& board) {
  std::vector<int64_t> ids;
  for (const v1::LeaderboardRow& row : board.rows()) {
    ids.push_back(row.submission_id());
  }
  return ids;
}

TEST(Leaderboard, RanksByValidFlopsWithUnrankedRowsLast) {
  const std::vector<v1::Run> runs = {
      ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
      ScoredRun(3, 3, 99, "image_classification", 1, /*ranked=*/false),
      ScoredRun(4, 4, 20)};
  const v1::LeaderboardResponse board =
      BuildLeaderboard(runs, v1::LeaderboardRequest());
  EXPECT_THAT(SubmissionIds(board), ElementsAre(2, 4, 1, 3));
  EXPECT_EQ(board.rows(0).rank(), 1);
  EXPECT_EQ(board.rows(2).rank(), 3);
  EXPECT_EQ(board.rows(3).rank(), 0) << "unranked rows carry no rank";
}

TEST(Leaderboard, RowNamesTheFastPathsItsRunsHadOn) {
  v1::Run fused = ScoredRun(1, 1, 10);
  fused.mutable_spec()->set_fused_bn(true);
  fused.mutable_spec()->set_cuda_graph(true);
  const v1::LeaderboardResponse board =
      BuildLeaderboard({fused, ScoredRun(2, 2, 20)}, v1::LeaderboardRequest());
  ASSERT_EQ(board.rows_size(), 2);
  EXPECT_TRUE(board.rows(0).fast_paths().empty());
  EXPECT_THAT(board.rows(1).fast_paths(),
              ElementsAre("fused_bn", "cuda_graph"));
}

TEST(Leaderboard, AggregatesRepetitionsDroppingBestAndWorst) {
  const std::vector<v1::Run> runs = {
      ScoredRun(1, 7, 10, "image_classification", 3),
      ScoredRun(2, 7, 20, "image_classification", 3),
      ScoredRun(3, 7, 90, "image_classification", 3)};
  const v1::LeaderboardResponse board =
      BuildLeaderboard(runs, v1::LeaderboardRequest());
  ASSERT_EQ(board.rows_size(), 1);
  EXPECT_DOUBLE_EQ(board.rows(0).valid_flops(), 20);
  EXPECT_DOUBLE_EQ(board.rows(0).valid_flops_min(), 10);
  EXPECT_DOUBLE_EQ(board.rows(0).valid_flops_max(), 90);
  EXPECT_EQ(board.rows(0).runs(), 3);
  EXPECT_THAT(board.rows(0).run_ids(), ElementsAre(1, 2, 3));
}

TEST(Leaderboard, ListsNoSubmissionMissingARunOrWithAFailedOne) {
  v1::Run failed = ScoredRun(3, 2, 50, "image_classification", 2);
  failed.set_state(v1::RUN_STATE_FAILED);
  const std::vector<v1::Run> runs = {
      ScoredRun(1, 1, 10, "image_classification", 2),  // 1 of 2 runs
      ScoredRun(2, 2, 10, "image_classification", 2), failed};
  EXPECT_EQ(BuildLeaderboard(runs, v1::LeaderboardRequest()).rows_size(), 0);
}

TEST(Leaderboard, FiltersByWorkloadAndRanksEachWorkloadApart) {
  const std::vector<v1::Run> runs = {ScoredRun(1, 1, 10),
                                     ScoredRun(2, 2, 50, "weather")};
  v1::LeaderboardRequest request;
  request.set_workload("weather");
  EXPECT_THAT(SubmissionIds(BuildLeaderboard(runs, request)), ElementsAre(2));
  const v1::LeaderboardResponse all =
      BuildLeaderboard(runs, v1::LeaderboardRequest());
  ASSERT_EQ(all.rows_size(), 2);
  EXPECT_EQ(all.rows(0).rank(), 1);
  EXPECT_EQ(all.rows(1).rank(), 1);
}

TEST(Leaderboard, PagesAfterRankingAndCountsEveryRow) {
  const std::vector<v1::Run> runs = {ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
                                     ScoredRun(3, 3, 20),
                                     ScoredRun(4, 4, 40, "weather")};
  v1::LeaderboardRequest request;
  request.set_limit(2);
  request.set_offset(1);
  const v1::LeaderboardResponse page = BuildLeaderboard(runs, request);
  EXPECT_EQ(page.total(), 4);
  EXPECT_THAT(SubmissionIds(page), ElementsAre(3, 1));
  EXPECT_EQ(page.rows(0).rank(), 2) << "ranked before paging";
  request.set_offset(4);
  EXPECT_EQ(BuildLeaderboard(runs, request).rows_size(), 0);
  EXPECT_EQ(BuildLeaderboard(runs, request).total(), 4);
}

TEST(Leaderboard, SubmissionRowIsNulloptUntilEveryRepetitionScored) {
  const v1::Run first = ScoredRun(1, 5, 10, "image_classification", 2);
  v1::Run second = ScoredRun(2, 5, 30, "image_classification", 2);
  EXPECT_FALSE(SubmissionRow({&first}).has_value());
  second.set_invalidated_by("admin");
  EXPECT_FALSE(SubmissionRow({&second, &first}).has_value());
  second.clear_invalidated_by();
  const std::optional<v1::LeaderboardRow> row =
      SubmissionRow({&second, &first});
  ASSERT_TRUE(row.has_value());
  EXPECT_THAT(row->run_ids(), ElementsAre(1, 2));
  EXPECT_DOUBLE_EQ(row->valid_flops(), 20);
  EXPECT_EQ(row->rank(), 0) << "ranks are given on the board";
}

TEST(Leaderboard, ListsNoNoopSubmission) {
  v1::Run noop = ScoredRun(2, 2, 0, kNoopWorkload, 1, /*ranked=*/false);
  noop.mutable_score()->set_quality(0);
  noop.mutable_score()->set_target(0);
  noop.mutable_score()->set_reached_target(true);
  EXPECT_FALSE(SubmissionRow({&noop}).has_value());
  const std::vector<v1::Run> runs = {ScoredRun(1, 1, 10), noop};
  EXPECT_THAT(SubmissionIds(BuildLeaderboard(runs, v1::LeaderboardRequest())),
              ElementsAre(1));
  v1::LeaderboardRequest only_noop;
  only_noop.set_workload(kNoopWorkload);
  EXPECT_EQ(BuildLeaderboard(runs, only_noop).rows_size(), 0);
}

TEST(Leaderboard, PageBoundsAreInvalidArgumentNamingTheField) {
  const Registry& registry = Registry::Builtin();
  v1::LeaderboardRequest request;
  request.set_limit(kMaxLeaderboardLimit);
  EXPECT_TRUE(ValidateLeaderboardRequest(request, registry).ok());
  request.set_limit(kMaxLeaderboardLimit + 1);
  absl::Status status = ValidateLeaderboardRequest(request, registry);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("'limit'"));
  request.set_limit(-1);
  EXPECT_TRUE(
      absl::IsInvalidArgument(ValidateLeaderboardRequest(request, registry)));
  request.set_limit(0);
  request.set_offset(-3);
  status = ValidateLeaderboardRequest(request, registry);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("'offset'"));
}

TEST(Leaderboard, UnknownWorkloadOrConfigIsInvalidArgument) {
  const Registry& registry = Registry::Builtin();
  v1::LeaderboardRequest request;
  EXPECT_TRUE(ValidateLeaderboardRequest(request, registry).ok());
  request.set_workload("no_such_workload");
  EXPECT_TRUE(
      absl::IsInvalidArgument(ValidateLeaderboardRequest(request, registry)));
  request.set_workload(registry.configs().front().workload);
  request.set_config("no_such_config");
  EXPECT_TRUE(
      absl::IsInvalidArgument(ValidateLeaderboardRequest(request, registry)));
  request.set_config(registry.configs().front().name);
  EXPECT_TRUE(ValidateLeaderboardRequest(request, registry).ok());
}

TEST(Leaderboard, LevelFilterRanksWithinTheLevel) {
  std::vector<v1::Run> runs = {ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
                               ScoredRun(3, 3, 20)};
  runs[0].mutable_spec()->set_level("hardware");
  runs[1].mutable_spec()->set_level("system");
  runs[2].mutable_spec()->set_level("hardware");
  v1::LeaderboardRequest request;
  request.set_level("hardware");
  const v1::LeaderboardResponse board = BuildLeaderboard(runs, request);
  EXPECT_THAT(SubmissionIds(board), ElementsAre(3, 1));
  EXPECT_EQ(board.rows(0).rank(), 1) << "first of its level";
  EXPECT_EQ(board.total(), 2);
}

TEST(Leaderboard, RankedFilterKeepsOnlyThoseRows) {
  const std::vector<v1::Run> runs = {
      ScoredRun(1, 1, 10),
      ScoredRun(2, 2, 99, "image_classification", 1, /*ranked=*/false)};
  v1::LeaderboardRequest request;
  request.set_ranked(kUnrankedFilter);
  EXPECT_THAT(SubmissionIds(BuildLeaderboard(runs, request)), ElementsAre(2));
  request.set_ranked(kRankedFilter);
  EXPECT_THAT(SubmissionIds(BuildLeaderboard(runs, request)), ElementsAre(1));
}

TEST(Leaderboard, SortsByAColumnKeepingRanksThenPages) {
  std::vector<v1::Run> runs = {ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
                               ScoredRun(3, 3, 20)};
  runs[0].mutable_spec()->set_system("c");
  runs[1].mutable_spec()->set_system("a");
  runs[2].mutable_spec()->set_system("b");
  v1::LeaderboardRequest request;
  request.set_sort("system");
  request.set_ascending(true);
  v1::LeaderboardResponse board = BuildLeaderboard(runs, request);
  EXPECT_THAT(SubmissionIds(board), ElementsAre(2, 3, 1));
  EXPECT_EQ(board.rows(0).rank(), 1) << "a row keeps its rank";
  request.set_ascending(false);
  request.set_limit(1);
  request.set_offset(1);
  board = BuildLeaderboard(runs, request);
  EXPECT_THAT(SubmissionIds(board), ElementsAre(3));
  EXPECT_EQ(board.total(), 3);
}

TEST(Leaderboard, SortByRankKeepsUnrankedRowsLastEitherWay) {
  const std::vector<v1::Run> runs = {
      ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
      ScoredRun(3, 3, 99, "image_classification", 1, /*ranked=*/false)};
  v1::LeaderboardRequest request;
  request.set_sort("rank");
  request.set_ascending(false);
  EXPECT_THAT(SubmissionIds(BuildLeaderboard(runs, request)),
              ElementsAre(1, 2, 3));
}

TEST(Leaderboard, RowCarriesDevicesVersionsUserAndPerWatt) {
  v1::Run first = ScoredRun(1, 5, 10, "image_classification", 2);
  v1::Run second = ScoredRun(2, 5, 30, "image_classification", 2);
  for (v1::Run* run : {&first, &second}) {
    run->set_user("ana");
    run->mutable_spec()->set_nodes(2);
    run->mutable_spec()->set_ranks_per_node(8);
    run->mutable_spec()->set_precision("bf16");
    run->mutable_score()->set_train_seconds(run->id() * 100.0);
  }
  first.mutable_score()->set_valid_flops_per_watt(4);
  second.mutable_score()->set_valid_flops_per_watt(6);
  v1::Attempt* attempt = first.add_attempts();
  attempt->add_nodes("n0");
  attempt->add_nodes("n1");
  v1::Inventory& inventory = (*attempt->mutable_inventory())["n0"];
  inventory.add_devices()->set_model("NVIDIA H200");
  (*inventory.mutable_versions())["nccl"] = "2.21.5";
  std::optional<v1::LeaderboardRow> row = SubmissionRow({&first, &second});
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->nodes(), 2);
  EXPECT_EQ(row->ranks_per_node(), 8);
  EXPECT_EQ(row->device_model(), "NVIDIA H200");
  EXPECT_EQ(row->versions().at("nccl"), "2.21.5");
  EXPECT_EQ(row->user(), "ana");
  EXPECT_EQ(row->precision(), "bf16");
  EXPECT_DOUBLE_EQ(row->valid_flops_per_watt(), 5);
  EXPECT_DOUBLE_EQ(row->train_seconds(), 150);

  second.mutable_score()->set_valid_flops_per_watt(0);
  row = SubmissionRow({&first, &second});
  EXPECT_DOUBLE_EQ(row->valid_flops_per_watt(), 0)
      << "not every run measured energy";
}

TEST(Leaderboard, BadLevelRankedOrSortIsInvalidArgumentNamingIt) {
  const Registry& registry = Registry::Builtin();
  for (const auto& [field, set] :
       std::vector<std::pair<std::string,
                             std::function<void(v1::LeaderboardRequest&)>>>{
           {"'level'", [](auto& r) { r.set_level("gold"); }},
           {"'ranked'", [](auto& r) { r.set_ranked("yes"); }},
           {"'sort'", [](auto& r) { r.set_sort("speed"); }}}) {
    v1::LeaderboardRequest request;
    set(request);
    const absl::Status status = ValidateLeaderboardRequest(request, registry);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << field;
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(field));
  }
  v1::LeaderboardRequest good;
  good.set_level("free");
  good.set_ranked(kRankedFilter);
  good.set_sort("valid_flops_per_watt");
  EXPECT_TRUE(ValidateLeaderboardRequest(good, registry).ok());
}

// A run of submission 9 (five repetitions) that first reached its target
// after `epochs_to_target` epochs, trained `samples` in 100 s.
v1::Run RepetitionRun(int64_t id, int epochs_to_target, int64_t samples) {
  v1::Run run = ScoredRun(id, 9, 100, "image_classification", 5);
  run.mutable_spec()->set_batch_size(32);
  run.mutable_spec()->set_nodes(1);
  run.mutable_spec()->set_ranks_per_node(2);  // global batch 64
  run.mutable_score()->set_samples(samples);
  run.mutable_score()->set_train_seconds(100);
  for (int epoch = 1; epoch <= 6; ++epoch) {
    v1::EpochSummary* summary = run.add_epochs();
    summary->set_epoch(epoch);
    summary->set_accuracy(epoch >= epochs_to_target ? 0.75 : 0.5);
  }
  return run;
}

// A registry whose config "cfg" has one reference point at global batch 64:
// ten runs of 30..39 epochs (mean 34.5 without the extremes; the checker's
// fastest acceptable mean for five runs is 30.94).
Registry WithReference() {
  std::string error;
  std::optional<Registry> registry = Registry::Parse(
      "[workload image_classification]\nmetric = top1\n"
      "[config image_classification/cfg]\nepochs = 40\nbatch_size = 32\n"
      "target = 0.7\n"
      "[rcp image_classification/cfg]\nglobal_batch = 64\n"
      "epochs_to_target = 30 31 32 33 34 35 36 37 38 39\nmade_by = test\n",
      &error);
  EXPECT_TRUE(registry.has_value()) << error;
  return *std::move(registry);
}

TEST(Leaderboard, RowCarriesTheRepetitionsSpread) {
  std::vector<v1::Run> runs;
  const int epochs[] = {3, 3, 4, 3, 5};
  const int64_t samples[] = {9800, 10000, 10200, 10000, 10000};
  for (int i = 0; i < 5; ++i) {
    runs.push_back(RepetitionRun(i + 1, epochs[i], samples[i]));
  }
  std::vector<const v1::Run*> members;
  for (const v1::Run& run : runs) members.push_back(&run);
  const std::optional<v1::LeaderboardRow> row =
      SubmissionRow(members, WithReference());
  ASSERT_TRUE(row.has_value());
  // Throughput 98, 100, 102, 100, 100 samples/s: sample deviation
  // sqrt(8 / 4) over 100.
  EXPECT_NEAR(row->throughput_cv(), std::sqrt(2.0) / 100, 1e-12);
  EXPECT_NEAR(row->epochs_to_target_cv(), std::sqrt(0.8) / 3.6, 1e-12);
  EXPECT_DOUBLE_EQ(row->epochs_to_target(), 10.0 / 3);  // 3, 3, 4

  v1::LeaderboardResponse response;
  *response.add_rows() = *row;
  MarkSpread({.throughput_cv = 0.02, .epochs_to_target_cv = 0.5}, response);
  EXPECT_FALSE(response.rows(0).unrepeatable());
  EXPECT_DOUBLE_EQ(response.throughput_cv_limit(), 0.02);
  MarkSpread({.throughput_cv = 0.01, .epochs_to_target_cv = 0.5}, response);
  EXPECT_TRUE(response.rows(0).unrepeatable()) << "1.4% is above 1%";
  MarkSpread({.throughput_cv = 0.02, .epochs_to_target_cv = 0.2}, response);
  EXPECT_TRUE(response.rows(0).unrepeatable()) << "epochs spread 24.8%";
}

TEST(Leaderboard, ConvergenceCheckNormalisesAFasterSubmission) {
  const Registry registry = WithReference();
  auto row_of = [&](std::vector<int> epochs) {
    std::vector<v1::Run> runs;
    for (size_t i = 0; i < epochs.size(); ++i) {
      runs.push_back(
          RepetitionRun(static_cast<int64_t>(i) + 1, epochs[i], 10000));
      runs.back().clear_epochs();
      for (int epoch = 1; epoch <= 45; ++epoch) {
        v1::EpochSummary* summary = runs.back().add_epochs();
        summary->set_epoch(epoch);
        summary->set_accuracy(epoch >= epochs[i] ? 0.75 : 0.5);
      }
    }
    std::vector<const v1::Run*> members;
    for (const v1::Run& run : runs) members.push_back(&run);
    return *SubmissionRow(members, registry);
  };
  const v1::LeaderboardRow slow = row_of({35, 36, 37, 40, 33});
  EXPECT_EQ(slow.convergence().verdict(), "pass");
  EXPECT_DOUBLE_EQ(slow.valid_flops(), 100);
  EXPECT_EQ(slow.convergence().global_batch(), 64);
  EXPECT_EQ(slow.convergence().reference(), "global batch 64");

  const v1::LeaderboardRow fast = row_of({32, 31, 32, 32, 36});
  EXPECT_EQ(fast.convergence().verdict(), "normalized");
  EXPECT_DOUBLE_EQ(fast.convergence().factor(), 34.5 / 32);
  EXPECT_DOUBLE_EQ(fast.convergence().reference_epochs(), 34.5);
  EXPECT_NEAR(fast.convergence().min_epochs(), 30.9355, 1e-3);
  EXPECT_DOUBLE_EQ(fast.valid_flops_unnormalized(), 100);
  EXPECT_DOUBLE_EQ(fast.valid_flops(), 100 * 32 / 34.5);
  EXPECT_DOUBLE_EQ(fast.valid_flops_max(), 100 * 32 / 34.5);

  EXPECT_EQ(row_of({25, 26, 27, 20, 30}).convergence().verdict(), "review");

  // Without a reference point the check is off and nothing changes.
  std::vector<v1::Run> runs = {RepetitionRun(1, 2, 100)};
  runs[0].mutable_spec()->set_repetitions(1);
  const std::optional<v1::LeaderboardRow> unchecked =
      SubmissionRow({&runs[0]}, Registry::Builtin());
  ASSERT_TRUE(unchecked.has_value());
  EXPECT_EQ(unchecked->convergence().verdict(), "unchecked");
  EXPECT_DOUBLE_EQ(unchecked->valid_flops(), 100);
}

TEST(Leaderboard, SubmissionFilterKeepsTheRowsRankAmongAll) {
  const std::vector<v1::Run> runs = {ScoredRun(1, 1, 10), ScoredRun(2, 2, 30),
                                     ScoredRun(3, 3, 20)};
  v1::LeaderboardRequest request;
  request.set_submission_id(1);
  const v1::LeaderboardResponse board = BuildLeaderboard(runs, request);
  ASSERT_EQ(board.rows_size(), 1);
  EXPECT_EQ(board.rows(0).submission_id(), 1);
  EXPECT_EQ(board.rows(0).rank(), 3);
}

}  // namespace
}  // namespace hpcai500
