#include "server/coordinator/run_record.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator/test_events.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RunRecord TwoByTwoRun() {
  RunRecord record;
  record.run.set_id(9);
  record.run.set_state(v1::RUN_STATE_QUEUED);
  record.run.mutable_spec()->set_nodes(2);
  record.run.mutable_spec()->set_ranks_per_node(2);
  record.run.mutable_spec()->set_epochs(3);
  return record;
}

TEST(RunRecord, EachNodeHostsOnlyItsOwnRanks) {
  RunRecord record = TwoByTwoRun();
  record.BeginAttempt({"a", "b"}, /*now_ms=*/100);
  EXPECT_TRUE(record.HostsRank("a", 0));
  EXPECT_TRUE(record.HostsRank("a", 1));
  EXPECT_FALSE(record.HostsRank("a", 2));
  EXPECT_TRUE(record.HostsRank("b", 3));
  EXPECT_FALSE(record.HostsRank("b", 4));
  EXPECT_FALSE(record.HostsRank("b", -1));
  EXPECT_FALSE(record.HostsRank("c", 0));
}

TEST(RunRecord, EachAttemptStartsAfreshAndGetsTheNextNumber) {
  RunRecord record = TwoByTwoRun();
  record.BeginAttempt({"a", "b"}, 100);
  record.exits[0].set_exit_code(0);
  record.tracker.Add(testing::EpochStats(0, 1, 1, 10, 1.0, 0.1));
  record.RefreshEpochs("accuracy", /*flush=*/false);
  ASSERT_EQ(record.run.epochs_size(), 1);
  const v1::Attempt& second = record.BeginAttempt({"b", "a"}, 200);
  EXPECT_EQ(second.number(), 2);
  EXPECT_EQ(record.key().attempt(), 2);
  EXPECT_EQ(record.run.state(), v1::RUN_STATE_STARTING);
  EXPECT_EQ(record.run.started_ms(), 100) << "the run started with attempt 1";
  EXPECT_TRUE(record.exits.empty());
  EXPECT_TRUE(record.tracker.empty());
  EXPECT_EQ(record.run.epochs_size(), 0);
  EXPECT_TRUE(record.HostsRank("b", 0));
}

TEST(RunRecord, AssignmentsNumberRanksNodeMajor) {
  RunRecord record = TwoByTwoRun();
  record.BeginAttempt({"a", "b"}, 100);
  const v1::Assignment second =
      record.AssignmentFor(v1::Assignment::PHASE_START, /*node_rank=*/1)
          .assignment();
  EXPECT_EQ(second.phase(), v1::Assignment::PHASE_START);
  EXPECT_EQ(second.key().run_id(), 9);
  EXPECT_EQ(second.key().attempt(), 1);
  EXPECT_EQ(second.world_size(), 4);
  EXPECT_EQ(second.node_rank(), 1);
  EXPECT_THAT(second.ranks(), ElementsAre(2, 3));
}

TEST(RunRecord, EndRecordsTheStateOnTheRunAndItsAttempt) {
  RunRecord record = TwoByTwoRun();
  record.BeginAttempt({"a", "b"}, 100);
  record.BeginRunning("10.0.0.1", 29500);
  EXPECT_EQ(record.run.state(), v1::RUN_STATE_RUNNING);
  EXPECT_TRUE(record.start_sent);
  record.End(v1::RUN_STATE_FAILED, "rank 1 exited with code 3", 300);
  EXPECT_EQ(record.run.state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(record.run.error(), "rank 1 exited with code 3");
  EXPECT_EQ(record.run.finished_ms(), 300);
  const v1::Attempt& attempt = record.run.attempts(0);
  EXPECT_EQ(attempt.state(), "failed");
  EXPECT_EQ(attempt.master_port(), 29500);
  EXPECT_EQ(attempt.error(), "rank 1 exited with code 3");
}

TEST(RunRecord, WatchersGetEachChangeAndLogLineOnce) {
  RunRecord record = TwoByTwoRun();
  RunWatchCursor cursor;
  ASSERT_TRUE(record.UpdateSince(cursor).has_value()) << "the first look";
  EXPECT_FALSE(record.UpdateSince(cursor).has_value());
  record.Changed("first");
  record.Changed("second");
  std::optional<v1::RunUpdate> update = record.UpdateSince(cursor);
  ASSERT_TRUE(update.has_value());
  EXPECT_THAT(update->log(), ElementsAre("first", "second"));
  EXPECT_FALSE(update->final());
  record.End(v1::RUN_STATE_CANCELLED, "", 5);
  record.Changed("");
  update = record.UpdateSince(cursor);
  ASSERT_TRUE(update.has_value());
  EXPECT_TRUE(update->log().empty());
  EXPECT_TRUE(update->final());
}

TEST(RunRecord, AStoredRunReadsAsItDidLive) {
  v1::Run run;
  run.set_id(4);
  run.set_state(v1::RUN_STATE_FAILED);
  run.set_error("node a silent");
  run.mutable_spec()->set_epochs(2);
  v1::EpochSummary* epoch = run.add_epochs();
  epoch->set_epoch(1);
  epoch->set_accuracy(-1);
  const RunRecord record = RunRecord::FromStored(run, "accuracy");
  ASSERT_EQ(record.log.size(), 2u);
  EXPECT_THAT(record.log[0], HasSubstr("epoch 1/2"));
  EXPECT_EQ(record.log[1], "failed: node a silent");
}

}  // namespace
}  // namespace hpcai500
