#include "server/coordinator/run_tracker.h"

#include <vector>

#include "gtest/gtest.h"
#include "methodology/scoring.h"
#include "tests/common/test_files.h"
#include "tests/server/coordinator/test_events.h"

namespace hpcai500 {
namespace {

using testing::EpochStats;
using testing::Event;

TEST(RunTracker, SummarisesEachEpochAcrossRanksAsEventsArrive) {
  RunTracker tracker;
  tracker.Add(EpochStats(/*rank=*/0, 1, /*epoch=*/1, 100, 2.0, 0.5));
  std::vector<v1::EpochSummary> epochs = tracker.Epochs();
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].samples(), 100);
  EXPECT_LT(epochs[0].accuracy(), 0) << "not evaluated yet";

  tracker.Add(EpochStats(/*rank=*/1, 1, /*epoch=*/1, 120, 4.0, 0.9));
  tracker.Add(Event("eval_accuracy", "0.75", /*rank=*/0, 2, /*epoch=*/1));
  epochs = tracker.Epochs();
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].epoch(), 1);
  EXPECT_EQ(epochs[0].samples(), 220);
  EXPECT_DOUBLE_EQ(epochs[0].seconds(), 4.0);  // the slowest rank
  EXPECT_DOUBLE_EQ(epochs[0].throughput(), 55.0);
  EXPECT_DOUBLE_EQ(epochs[0].train_loss(), 0.5);  // rank 0's
  EXPECT_DOUBLE_EQ(epochs[0].accuracy(), 0.75);
}

TEST(RunTracker, AgreesWithSummarizeEpochsOnAWholeRun) {
  RunTracker tracker;
  std::vector<EventLine> events;
  for (const char* file :
       {"events/fmnist_rank0.mllog", "events/fmnist_rank1.mllog"}) {
    for (const std::string& line : testing::FixtureLines(file)) {
      absl::StatusOr<EventLine> event = ParseEventLine(line);
      ASSERT_TRUE(event.ok()) << event.status();
      events.push_back(*event);
      tracker.Add(*event);
    }
  }
  const std::vector<v1::EpochSummary> expected = SummarizeEpochs(events);
  const std::vector<v1::EpochSummary> got = tracker.Epochs();
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].SerializeAsString(), expected[i].SerializeAsString())
        << "epoch " << expected[i].epoch();
  }
  EXPECT_EQ(tracker.events().size(), events.size());
  EXPECT_EQ(tracker.stopped_ranks(), 2);
}

TEST(RunTracker, LogsAnEpochOnceWhenEveryRankReportedAndRankZeroEvaluated) {
  RunTracker tracker;
  tracker.Add(EpochStats(0, 1, /*epoch=*/1, 100, 1.0, 0.5));
  tracker.Add(Event("eval_accuracy", "0.5", 0, 2, /*epoch=*/1));
  EXPECT_TRUE(tracker.TakeEpochsToLog(/*world=*/2, /*flush=*/false).empty())
      << "rank 1 has not reported epoch 1";
  tracker.Add(EpochStats(1, 1, /*epoch=*/1, 100, 1.0, 0.6));
  std::vector<v1::EpochSummary> logged =
      tracker.TakeEpochsToLog(/*world=*/2, /*flush=*/false);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].epoch(), 1);
  EXPECT_TRUE(tracker.TakeEpochsToLog(2, /*flush=*/false).empty());
  EXPECT_TRUE(tracker.TakeEpochsToLog(2, /*flush=*/true).empty());
}

TEST(RunTracker, FlushTakesIncompleteEpochsAndResetForgetsAll) {
  RunTracker tracker;
  tracker.Add(EpochStats(0, 1, /*epoch=*/1, 100, 1.0, 0.5));
  tracker.Add(EpochStats(0, 2, /*epoch=*/2, 100, 1.0, 0.4));
  EXPECT_TRUE(tracker.TakeEpochsToLog(1, /*flush=*/false).empty());
  EXPECT_EQ(tracker.TakeEpochsToLog(1, /*flush=*/true).size(), 2u);
  tracker.Add(Event("run_stop", "null", 0, 3));
  EXPECT_EQ(tracker.stopped_ranks(), 1);
  tracker.Reset();
  EXPECT_TRUE(tracker.empty());
  EXPECT_TRUE(tracker.Epochs().empty());
  EXPECT_EQ(tracker.stopped_ranks(), 0);
}

TEST(RunTracker, ANonNumericAccuracyAloneMakesNoEpoch) {
  RunTracker tracker;
  tracker.Add(Event("eval_accuracy", "\"n/a\"", 0, 1, /*epoch=*/3));
  EXPECT_FALSE(tracker.empty());
  EXPECT_TRUE(tracker.Epochs().empty());
}

}  // namespace
}  // namespace hpcai500
