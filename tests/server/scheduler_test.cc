#include "server/scheduler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
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

TEST(Scheduler, HeadOfQueueBlocksLaterRuns) {
  Scheduler scheduler;
  scheduler.SetNode("a", 1, true);
  scheduler.Enqueue(1, /*nodes=*/2, /*ranks_per_node=*/1);  // cannot fit
  scheduler.Enqueue(2, /*nodes=*/1, /*ranks_per_node=*/1);  // would fit
  EXPECT_THAT(scheduler.Schedule(), IsEmpty());
  EXPECT_EQ(scheduler.queue_length(), 2);

  scheduler.SetNode("b", 1, true);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 1);  // first come, first served
  EXPECT_TRUE(scheduler.IsQueued(2));
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
