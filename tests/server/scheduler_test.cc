#include "server/scheduler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(Scheduler, GangSchedulesAllOrNothing) {
  Scheduler scheduler;
  scheduler.SetNode("a", 2, true);
  scheduler.SetNode("b", 1, true);
  scheduler.Enqueue(1, /*nodes=*/2, /*ranks_per_node=*/2);
  // Only "a" has 2 free slots: nothing is placed, nothing is held.
  EXPECT_THAT(scheduler.Schedule(), IsEmpty());
  EXPECT_EQ(scheduler.used_slots("a"), 0);
  EXPECT_EQ(scheduler.queue_length(), 1);

  scheduler.SetNode("b", 2, true);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 1);
  EXPECT_THAT(placed[0].nodes, ElementsAre("a", "b"));
  EXPECT_EQ(scheduler.used_slots("a"), 2);
  EXPECT_EQ(scheduler.used_slots("b"), 2);
  EXPECT_EQ(scheduler.queue_length(), 0);
}

TEST(Scheduler, OldestRunThatCouldFitBlocksLaterRuns) {
  Scheduler scheduler;
  scheduler.SetNode("a", 1, true);
  scheduler.SetNode("b", 1, true);
  scheduler.Enqueue(1, /*nodes=*/1, /*ranks_per_node=*/1);
  ASSERT_EQ(scheduler.Schedule().size(), 1u);               // run 1 on a
  scheduler.Enqueue(2, /*nodes=*/2, /*ranks_per_node=*/1);  // waits for a
  scheduler.Enqueue(3, /*nodes=*/1, /*ranks_per_node=*/1);  // would fit b
  EXPECT_THAT(scheduler.Schedule(), IsEmpty());
  EXPECT_EQ(scheduler.queue_length(), 2);
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("Resources: waiting for 2"));
  EXPECT_EQ(scheduler.Reason(3), "Priority: waits behind run 2");

  scheduler.Release(1);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 2);  // first come, first served
  EXPECT_TRUE(scheduler.IsQueued(3));
}

TEST(Scheduler, RunLargerThanTheConnectedNodesWaitsWithoutBlocking) {
  Scheduler scheduler;
  scheduler.SetNode("a", 1, true);
  scheduler.SetNode("b", 1, false);                         // away
  scheduler.Enqueue(1, /*nodes=*/2, /*ranks_per_node=*/1);  // cannot fit now
  scheduler.Enqueue(2, /*nodes=*/1, /*ranks_per_node=*/1);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 2);
  EXPECT_THAT(scheduler.Reason(1),
              HasSubstr("needs 2 nodes with 1 slots; 1 connected node(s)"));
  EXPECT_EQ(scheduler.NodesWithSlots(1, /*schedulable_only=*/false), 2);
  EXPECT_EQ(scheduler.NodesWithSlots(2, /*schedulable_only=*/false), 0);
}

TEST(Scheduler, RequeuedRunGoesBackInSubmissionOrder) {
  Scheduler scheduler;
  scheduler.SetNode("a", 1, true);
  scheduler.Enqueue(5, 1, 1);
  scheduler.Enqueue(7, 1, 1);
  scheduler.Enqueue(3, 1, 1);  // requeued: older than both
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 3);
}

TEST(Scheduler, ReleaseFreesSlotsForTheNextRun) {
  Scheduler scheduler;
  scheduler.SetNode("a", 1, true);
  scheduler.Enqueue(1, 1, 1);
  scheduler.Enqueue(2, 1, 1);
  ASSERT_EQ(scheduler.Schedule().size(), 1u);
  EXPECT_THAT(scheduler.Schedule(), IsEmpty());
  scheduler.Release(1);
  EXPECT_EQ(scheduler.used_slots("a"), 0);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 2);
}

TEST(Scheduler, UnschedulableNodeKeepsHeldSlotsButTakesNoNewRun) {
  Scheduler scheduler;
  scheduler.SetNode("a", 2, true);
  scheduler.Enqueue(1, 1, 1);
  ASSERT_EQ(scheduler.Schedule().size(), 1u);
  scheduler.SetNode("a", 2, false);  // disconnected
  EXPECT_EQ(scheduler.used_slots("a"), 1);
  scheduler.Enqueue(2, 1, 1);
  EXPECT_THAT(scheduler.Schedule(), IsEmpty());
}

TEST(Scheduler, DequeueRemovesOnlyQueuedRuns) {
  Scheduler scheduler;
  scheduler.Enqueue(7, 1, 1);
  EXPECT_TRUE(scheduler.Dequeue(7));
  EXPECT_FALSE(scheduler.Dequeue(7));
  EXPECT_EQ(scheduler.queue_length(), 0);
}

}  // namespace
}  // namespace hpcai500
