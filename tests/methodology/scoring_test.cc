#include "methodology/scoring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

std::vector<EventLine> LoadEvents(const std::vector<std::string>& files) {
  std::vector<EventLine> events;
  for (const std::string& file : files) {
    for (const std::string& line : testing::FixtureLines(file)) {
      absl::StatusOr<EventLine> event = ParseEventLine(line);
      EXPECT_TRUE(event.ok()) << event.status();
      if (event.ok()) events.push_back(*event);
    }
  }
  return events;
}

const ConfigInfo& SmokeConfig() {
  return *Registry::Builtin().FindConfig("image_classification",
                                         "fashion_mnist_smoke");
}
const WorkloadInfo& Ic() {
  return *Registry::Builtin().FindWorkload("image_classification");
}

TEST(ValidFlops, FollowsThePublishedFormulaWithoutCap) {
  EXPECT_DOUBLE_EQ(ValidFlops(1e12, 0.763, 0.763, 5), 1e12);
  EXPECT_NEAR(ValidFlops(1e12, 0.70, 0.763, 5),
              1e12 * std::pow(0.70 / 0.763, 5), 1);
  EXPECT_GT(ValidFlops(1e12, 0.80, 0.763, 5), 1e12);  // no cap above target
  EXPECT_EQ(ValidFlops(1e12, 0, 0.763, 5), 0);
}

TEST(ScoreRun, ScoresTwoRankFixtureFromEveryInput) {
  std::vector<EventLine> events =
      LoadEvents({"events/fmnist_rank0.mllog", "events/fmnist_rank1.mllog"});
  absl::StatusOr<v1::Score> score = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_DOUBLE_EQ(score->quality(), 0.77);
  EXPECT_DOUBLE_EQ(score->target(), SmokeConfig().target);
  EXPECT_EQ(score->exponent(), 5);
  EXPECT_EQ(score->samples(), 12000);  // 2 ranks x 2 epochs x 3000
  // run_start..run_stop = 24.000 s, minus two 2-second evaluations.
  EXPECT_DOUBLE_EQ(score->train_seconds(), 20.0);
  EXPECT_DOUBLE_EQ(score->eval_seconds(), 4.0);
  EXPECT_DOUBLE_EQ(score->flops(), 3.0 * 12e6 * 12000 / 20.0);
  EXPECT_DOUBLE_EQ(score->valid_flops(),
                   score->flops() * std::pow(0.77 / SmokeConfig().target, 5));
  EXPECT_EQ(score->reached_target(), 0.77 >= SmokeConfig().target);
  EXPECT_FALSE(score->convention().empty());
}

TEST(ScoreRun, ValidFlopsPerWattFromEveryRanksEnergy) {
  std::vector<EventLine> events =
      LoadEvents({"events/fmnist_rank0.mllog", "events/fmnist_rank1.mllog"});
  absl::StatusOr<v1::Score> without = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->energy_joules(), 0);
  EXPECT_EQ(without->valid_flops_per_watt(), 0);
  for (EventLine& e : events) {
    if (e.key == "hpcai500_epoch_stats") e.value["energy_joules"] = 250.0;
  }
  absl::StatusOr<v1::Score> score = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_DOUBLE_EQ(score->energy_joules(), 1000.0);  // 2 ranks x 2 epochs
  // 1000 J over 20 s of training is 50 W on average.
  EXPECT_DOUBLE_EQ(score->valid_flops_per_watt(), score->valid_flops() / 50.0);
}

TEST(ScoreRun, RefusesARunWithoutAccuracy) {
  std::vector<EventLine> events = LoadEvents({"events/aborted_rank0.mllog"});
  absl::StatusOr<v1::Score> score = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_FALSE(score.ok());
  EXPECT_NE(score.status().message().find("eval_accuracy"), std::string::npos);
}

TEST(ScoreRun, RefusesARunWithoutRunStop) {
  std::vector<EventLine> events = LoadEvents({"events/fmnist_rank0.mllog"});
  events.pop_back();  // drop run_stop
  absl::StatusOr<v1::Score> score = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_FALSE(score.ok());
  EXPECT_NE(score.status().message().find("run_stop"), std::string::npos);
}

const ConfigInfo& NoopConfig() {
  return *Registry::Builtin().FindConfig(kNoopWorkload, "noop");
}
const WorkloadInfo& Noop() {
  return *Registry::Builtin().FindWorkload(kNoopWorkload);
}

// Every number of a score is finite: no NaN or infinity anywhere.
void ExpectAllFinite(const v1::Score& s) {
  for (double v :
       {s.quality(), s.target(), s.exponent(), s.forward_flops_per_sample(),
        s.train_seconds(), s.eval_seconds(), s.flops(), s.valid_flops(),
        s.energy_joules(), s.valid_flops_per_watt(), s.lost_seconds()}) {
    EXPECT_TRUE(std::isfinite(v)) << s.DebugString();
  }
}

TEST(ScoreRun, ANoopRunScoresZerosAgainstItsTargetOfZero) {
  std::vector<EventLine> events =
      LoadEvents({"events/noop_rank0.mllog", "events/noop_rank1.mllog"});
  absl::StatusOr<v1::Score> score = ScoreRun(events, NoopConfig(), Noop());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_EQ(score->quality(), 0);
  EXPECT_EQ(score->target(), 0);
  EXPECT_TRUE(score->reached_target()) << "0 >= 0: a noop has nothing to miss";
  EXPECT_EQ(score->samples(), 0);
  EXPECT_EQ(score->forward_flops_per_sample(), 0);
  EXPECT_EQ(score->flops(), 0);
  EXPECT_EQ(score->valid_flops(), 0);
  EXPECT_DOUBLE_EQ(score->train_seconds(), 0.041);
  ExpectAllFinite(*score);
}

TEST(ScoreRun, ANoopRunOfNoMeasurableTimeDividesByNothing) {
  std::vector<EventLine> events =
      LoadEvents({"events/noop_rank0.mllog", "events/noop_rank1.mllog"});
  int64_t start_ms = 0;
  for (const EventLine& e : events) {
    if (e.rank == 0 && e.key == "run_start") start_ms = e.time_ms;
  }
  for (EventLine& e : events) {  // a sub-millisecond world of one
    if (e.key == "run_stop") e.time_ms = start_ms;
    if (e.key == "hpcai500_epoch_stats") e.value["energy_joules"] = 1.5;
  }
  absl::StatusOr<v1::Score> score = ScoreRun(events, NoopConfig(), Noop());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_EQ(score->train_seconds(), 0);
  EXPECT_EQ(score->flops(), 0);
  EXPECT_EQ(score->valid_flops(), 0);
  EXPECT_EQ(score->valid_flops_per_watt(), 0) << "no watts over no time";
  ExpectAllFinite(*score);
  for (const v1::EpochSummary& epoch : SummarizeEpochs(events)) {
    EXPECT_TRUE(std::isfinite(epoch.throughput())) << epoch.DebugString();
  }
}

TEST(ScoreRun, ANoopRunStillNeedsItsRunStop) {
  std::vector<EventLine> events = LoadEvents({"events/noop_rank0.mllog"});
  events.pop_back();  // run_stop
  absl::StatusOr<v1::Score> score = ScoreRun(events, NoopConfig(), Noop());
  ASSERT_FALSE(score.ok());
  EXPECT_NE(score.status().message().find("run_start/run_stop"),
            std::string::npos)
      << score.status();
}

TEST(ScoreRun, ATrainingRunWithoutFlopsIsStillRefused) {
  std::vector<EventLine> events =
      LoadEvents({"events/noop_rank0.mllog", "events/noop_rank1.mllog"});
  EventLine accuracy = events.back();
  accuracy.key = "eval_accuracy";
  accuracy.value = 0.9;
  accuracy.rank = 0;
  events.insert(events.end() - 1, accuracy);
  absl::StatusOr<v1::Score> score = ScoreRun(events, SmokeConfig(), Ic());
  ASSERT_FALSE(score.ok()) << "only the noop workload scores zero FLOPs";
  EXPECT_NE(score.status().message().find("forward_flops"), std::string::npos)
      << score.status();
}

TEST(SummarizeEpochs, SumsSamplesTakesSlowestRankAndRankZeroAccuracy) {
  std::vector<v1::EpochSummary> epochs = SummarizeEpochs(
      LoadEvents({"events/fmnist_rank0.mllog", "events/fmnist_rank1.mllog"}));
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].epoch(), 1);
  EXPECT_EQ(epochs[0].samples(), 6000);
  EXPECT_DOUBLE_EQ(epochs[0].seconds(), 12.0);
  EXPECT_DOUBLE_EQ(epochs[0].throughput(), 500.0);
  EXPECT_DOUBLE_EQ(epochs[0].train_loss(), 0.91);
  EXPECT_DOUBLE_EQ(epochs[0].accuracy(), 0.69);
  EXPECT_DOUBLE_EQ(epochs[1].accuracy(), 0.77);
}

TEST(AggregateRepetitions, DropsBestAndWorstFromThreeOn) {
  Aggregate three = AggregateRepetitions({1.0, 10.0, 4.0});
  EXPECT_DOUBLE_EQ(three.mean, 4.0);
  EXPECT_DOUBLE_EQ(three.min, 1.0);
  EXPECT_DOUBLE_EQ(three.max, 10.0);
  Aggregate two = AggregateRepetitions({2.0, 4.0});
  EXPECT_DOUBLE_EQ(two.mean, 3.0);
  Aggregate five = AggregateRepetitions({5, 1, 3, 100, 4});
  EXPECT_DOUBLE_EQ(five.mean, 4.0);
  EXPECT_DOUBLE_EQ(AggregateRepetitions({}).mean, 0.0);
}

TEST(CoefficientOfVariation, SampleDeviationOverTheMean) {
  // Mean 100, sample deviation 2 (the n - 1 denominator): 2%.
  EXPECT_NEAR(CoefficientOfVariation({98, 100, 102}), 0.02, 1e-12);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({5, 5, 5}), 0);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({7}), 0);  // one run: no spread
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({}), 0);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation({-1, 1}), 0);  // mean 0
}

// One rank-0 event line at `time_ms` (epoch < 0: no epoch_num).
EventLine Event(int64_t time_ms, const std::string& key,
                const std::string& value_json, int epoch) {
  static int64_t seq = 0;
  std::string meta = "\"seq\": " + std::to_string(++seq) + ", \"rank\": 0";
  if (epoch >= 0) meta += ", \"epoch_num\": " + std::to_string(epoch);
  absl::StatusOr<EventLine> e = ParseEventLine(
      ":::MLLOG {\"time_ms\": " + std::to_string(time_ms) +
      ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key +
      "\", \"value\": " + value_json + ", \"metadata\": {" + meta + "}}");
  EXPECT_TRUE(e.ok()) << e.status();
  return *e;
}

// Epoch `epoch` from `t` (ms): 10 s of training over 3000 samples, then a
// 2 s evaluation reaching `accuracy`.
void AddEpoch(std::vector<EventLine>& events, int64_t t, int epoch,
              double accuracy) {
  events.push_back(Event(t, "epoch_start", "null", epoch));
  events.push_back(
      Event(t + 10000, "hpcai500_epoch_stats",
            R"({"samples": 3000, "seconds": 10.0, "train_loss": 0.5})", epoch));
  events.push_back(Event(t + 10000, "eval_start", "null", epoch));
  events.push_back(Event(t + 12000, "eval_stop", "null", epoch));
  events.push_back(
      Event(t + 12000, "eval_accuracy", std::to_string(accuracy), epoch));
}

TEST(ScoreAttempts, CountsEachKeptEpochOnceAndKeepsLostTimeOut) {
  // Attempt 1: epoch 1 and its checkpoint, then 5 s into epoch 2 it dies
  // (a lost node): those 5 s are lost.
  AttemptEvents first;
  first.through_epoch = 1;
  first.events.push_back(
      Event(0, "hpcai500_forward_flops_per_sample", "12000000.0", -1));
  first.events.push_back(Event(100, "run_start", "null", -1));
  AddEpoch(first.events, 100, 1, 0.69);
  first.events.push_back(Event(12200, "hpcai500_checkpoint", "\"c1\"", 1));
  first.events.push_back(Event(12200, "epoch_start", "null", 2));
  first.events.push_back(
      Event(17200, "hpcai500_epoch_stats",
            R"({"samples": 999, "seconds": 5.0, "train_loss": 0.9})", 2));
  // Attempt 2 resumes after epoch 1 and trains epoch 2.
  AttemptEvents second;
  second.after_epoch = 1;
  second.events.push_back(
      Event(50000, "hpcai500_forward_flops_per_sample", "12000000.0", -1));
  second.events.push_back(Event(50100, "run_start", "null", -1));
  AddEpoch(second.events, 50100, 2, 0.77);
  second.events.push_back(Event(62100, "run_stop", "null", -1));

  absl::StatusOr<v1::Score> score =
      ScoreAttempts({first, second}, SmokeConfig(), Ic());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_EQ(score->samples(), 6000);  // epoch 1 of #1, epoch 2 of #2
  // #1: 100..12200 minus 2 s of evaluation; #2: 50100..62100 minus 2 s.
  EXPECT_DOUBLE_EQ(score->train_seconds(), 10.1 + 10.0);
  EXPECT_DOUBLE_EQ(score->eval_seconds(), 4.0);
  EXPECT_DOUBLE_EQ(score->lost_seconds(), 5.0);
  EXPECT_DOUBLE_EQ(score->quality(), 0.77);
  EXPECT_DOUBLE_EQ(score->flops(), 3.0 * 12e6 * 6000 / 20.1);

  std::vector<v1::EpochSummary> epochs =
      SummarizeEpochs(KeptEvents({first, second}));
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[1].samples(), 3000);  // not the lost 999
  EXPECT_DOUBLE_EQ(epochs[1].accuracy(), 0.77);
}

TEST(ScoreAttempts, AWildWorkerClockSaturatesInsteadOfOverflowing) {
  // time_ms is whatever a worker wrote: from near the lowest int64 to near
  // the highest, a difference that does not fit in one (UBSan's builds
  // run this test).
  AttemptEvents only;
  only.events.push_back(
      Event(0, "hpcai500_forward_flops_per_sample", "12000000.0", -1));
  only.events.push_back(
      Event(-9'000'000'000'000'000'000, "run_start", "null", -1));
  AddEpoch(only.events, 100, 1, 0.77);
  only.events.push_back(
      Event(-9'000'000'000'000'000'000, "eval_start", "null", 1));
  only.events.push_back(
      Event(9'000'000'000'000'000'000, "eval_stop", "null", 1));
  only.events.push_back(
      Event(9'000'000'000'000'000'000, "run_stop", "null", -1));
  // The evaluation saturates at the longest time there is, leaving no
  // training time: refused, saying so, rather than a wrapped-around number.
  absl::StatusOr<v1::Score> score = ScoreAttempts({only}, SmokeConfig(), Ic());
  EXPECT_TRUE(absl::IsFailedPrecondition(score.status())) << score.status();
  EXPECT_NE(std::string(score.status().message()).find("training time is 0"),
            std::string::npos)
      << score.status();
  // Without the wild evaluation, the run's span saturates and it scores.
  only.events.erase(only.events.end() - 3, only.events.end() - 1);
  score = ScoreAttempts({only}, SmokeConfig(), Ic());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_TRUE(std::isfinite(score->train_seconds()));
  EXPECT_GT(score->train_seconds(), 9e15);
  EXPECT_DOUBLE_EQ(score->eval_seconds(), 2.0);
}

TEST(ScoreAttempts, RefusesAnEarlierAttemptWithoutItsCheckpoint) {
  AttemptEvents first;
  first.through_epoch = 1;
  first.events.push_back(Event(100, "run_start", "null", -1));
  AddEpoch(first.events, 100, 1, 0.69);
  AttemptEvents second;
  second.after_epoch = 1;
  second.events.push_back(Event(50100, "run_start", "null", -1));
  AddEpoch(second.events, 50100, 2, 0.77);
  second.events.push_back(Event(62100, "run_stop", "null", -1));
  absl::StatusOr<v1::Score> score =
      ScoreAttempts({first, second}, SmokeConfig(), Ic());
  ASSERT_FALSE(score.ok());
  EXPECT_NE(score.status().message().find("no checkpoint of epoch 1"),
            std::string::npos)
      << score.status();
}

}  // namespace
}  // namespace hpcai500
