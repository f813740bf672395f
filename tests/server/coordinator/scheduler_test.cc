#include "server/coordinator/scheduler.h"

#include <cstdio>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr int64_t kSecond = 1000;

// A node that registered and is heard from.
void Up(Scheduler& scheduler, const std::string& name, int slots, int gpus = 0,
        Labels labels = {}) {
  scheduler.SetNode(name, Scheduler::NodeOffer{slots, gpus, std::move(labels)});
  scheduler.SetSchedulable(name, true);
}

Scheduler::Request Job(int64_t id, int nodes = 1, int ranks_per_node = 1) {
  Scheduler::Request request;
  request.run_id = id;
  request.nodes = nodes;
  request.ranks_per_node = ranks_per_node;
  request.priority = 100;
  return request;
}

Scheduler::Request Limited(Scheduler::Request request, int64_t seconds) {
  request.time_limit_ms = seconds * kSecond;
  return request;
}

std::vector<int64_t> Ids(const std::vector<Scheduler::Placement>& placed) {
  std::vector<int64_t> ids;
  for (const Scheduler::Placement& p : placed) ids.push_back(p.run_id);
  return ids;
}

TEST(Scheduler, GangSchedulesAllOrNothing) {
  Scheduler scheduler;
  Up(scheduler, "a", 2);
  Up(scheduler, "b", 1);
  scheduler.Enqueue(Job(1, /*nodes=*/2, /*ranks_per_node=*/2));
  // Only "a" has 2 slots: nothing is placed, nothing is held.
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_EQ(scheduler.used_slots("a"), 0);
  EXPECT_EQ(scheduler.queue_length(), 1);

  Up(scheduler, "b", 2);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 1);
  EXPECT_THAT(placed[0].nodes, ElementsAre("a", "b"));
  EXPECT_FALSE(placed[0].backfilled);
  EXPECT_EQ(scheduler.used_slots("a"), 2);
  EXPECT_EQ(scheduler.used_slots("b"), 2);
  EXPECT_EQ(scheduler.queue_length(), 0);
}

TEST(Scheduler, RemovesOnlyANodeThatHoldsNothing) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  Up(scheduler, "b", 1);
  scheduler.Enqueue(Job(1));
  ASSERT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(1));  // on a
  EXPECT_FALSE(scheduler.RemoveNode("a")) << "it holds run 1's slot";
  EXPECT_FALSE(scheduler.RemoveNode("zz"));
  EXPECT_TRUE(scheduler.RemoveNode("b"));
  EXPECT_EQ(scheduler.node_count(), 1);
  // A run that needs two nodes now waits, counting one registered node.
  scheduler.Enqueue(Job(2, /*nodes=*/2));
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("1 registered node(s) match"));
}

TEST(Scheduler, NeedsSaysFreeOnlyOfWhatARunWaitsFor) {
  Scheduler scheduler;
  Scheduler::Request request = Job(1, /*nodes=*/2, /*ranks_per_node=*/8);
  request.gpus_per_node = 8;
  request.constraints = {{"rack", "3"}};
  EXPECT_EQ(scheduler.Needs(request, /*free=*/false),
            "2 node(s) of queue default with 8 slot(s) and 8 GPU(s) labelled "
            "rack=3");
  EXPECT_EQ(scheduler.Needs(request, /*free=*/true),
            "2 node(s) of queue default with 8 free slot(s) and 8 free GPU(s) "
            "labelled rack=3");
}

TEST(Scheduler, HighestPriorityFirstThenOldestAndHeldRunsWait) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  Scheduler::Request urgent = Job(2);
  urgent.priority = 500;
  Scheduler::Request held = Job(3);
  held.priority = 900;
  held.held = true;
  scheduler.Enqueue(Job(1));
  scheduler.Enqueue(urgent);
  scheduler.Enqueue(held);
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));
  EXPECT_EQ(scheduler.Reason(3), "Held");
  EXPECT_THAT(scheduler.Reason(1), StartsWith("Resources: waiting for 1"));

  EXPECT_TRUE(scheduler.SetHeld(3, false));
  scheduler.Deallocate(2);
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(3));  // released
  scheduler.Deallocate(3);
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(1));
  EXPECT_FALSE(scheduler.SetHeld(1, true));  // no longer queued
}

TEST(Scheduler, HeadWaitingForNodesBlocksRunsWithoutATimeLimit) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  Up(scheduler, "b", 1);
  scheduler.Enqueue(Job(1));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);  // run 1 on a, no limit
  scheduler.Enqueue(Job(2, /*nodes=*/2));       // waits for a
  scheduler.Enqueue(Job(3));                    // would fit b
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("start unknown"));
  EXPECT_EQ(scheduler.Reason(3),
            "Priority: waits behind run 2 (queue default)");

  scheduler.Deallocate(1);
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));  // oldest first
  EXPECT_TRUE(scheduler.IsQueued(3));
}

TEST(Scheduler, ShortRunBackfillsWithoutDelayingTheHead) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  Up(scheduler, "b", 1);
  scheduler.Enqueue(Limited(Job(1), 100));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);  // a until 100 s
  scheduler.Enqueue(Job(2, /*nodes=*/2));       // head: a and b at 100 s
  scheduler.Enqueue(Limited(Job(3), 150));      // would end after 100 s
  scheduler.Enqueue(Limited(Job(4), 50));       // ends at 60 s
  const int64_t now = 10 * kSecond;
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(now);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 4);
  EXPECT_THAT(placed[0].nodes, ElementsAre("b"));
  EXPECT_TRUE(placed[0].backfilled);
  EXPECT_THAT(scheduler.Reason(2),
              HasSubstr("expected to start within 90 s on a, b"));
  EXPECT_EQ(scheduler.Reason(3),
            "Priority: waits behind run 2 (queue default)");

  // Both end by 100 s: the head starts then, undelayed.
  scheduler.Deallocate(4);
  scheduler.Deallocate(1);
  EXPECT_THAT(Ids(scheduler.Schedule(100 * kSecond)), ElementsAre(2));
}

TEST(Scheduler, RunWithoutALimitBackfillsOnlyOntoNodesTheHeadDoesNotNeed) {
  Scheduler scheduler;
  Up(scheduler, "a", 1, 0, {{"rack", "1"}});
  Up(scheduler, "b", 1, 0, {{"rack", "1"}});
  Up(scheduler, "c", 1, 0, {{"rack", "2"}});
  Scheduler::Request first = Job(1);
  first.constraints = {{"rack", "1"}};
  scheduler.Enqueue(first);
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);  // a, no limit
  Scheduler::Request head = Job(2, /*nodes=*/2);
  head.constraints = {{"rack", "1"}};  // needs a and b
  scheduler.Enqueue(head);
  scheduler.Enqueue(Job(3));  // any node; no limit
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 3);
  EXPECT_THAT(placed[0].nodes, ElementsAre("c"));  // not b: reserved
  EXPECT_TRUE(placed[0].backfilled);
}

TEST(Scheduler, ConstraintsKeepARunOffNodesWithoutTheLabel) {
  Scheduler scheduler;
  Up(scheduler, "a", 1, 0, {{"rack", "1"}});
  Up(scheduler, "b", 1, 0, {{"rack", "2"}, {"gpu_model", "h200"}});
  Scheduler::Request on_two = Job(1);
  on_two.constraints = {{"rack", "2"}};
  Scheduler::Request on_three = Job(2);
  on_three.constraints = {{"rack", "3"}};
  scheduler.Enqueue(on_two);
  scheduler.Enqueue(on_three);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].nodes, ElementsAre("b"));
  EXPECT_THAT(scheduler.Reason(2), StartsWith("Constraints: needs 1 node(s)"));
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("labelled rack=3"));
  EXPECT_EQ(scheduler.EligibleNodes(on_three, /*up_only=*/false), 0);
}

TEST(Scheduler, CudaRunGoesOnlyWhereThatManyGpusAreFree) {
  Scheduler scheduler;
  Up(scheduler, "cpu", 8, /*gpus=*/0);
  Up(scheduler, "gpu", 4, /*gpus=*/2);
  Scheduler::Request two = Job(1, 1, /*ranks_per_node=*/2);
  two.gpus_per_node = 2;
  Scheduler::Request again = Job(2, 1, 2);
  again.gpus_per_node = 2;
  Scheduler::Request on_cpu = Job(3, 1, 2);  // a CPU run may use the slots
  scheduler.Enqueue(two);
  scheduler.Enqueue(again);
  scheduler.Enqueue(on_cpu);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].run_id, 1);
  EXPECT_THAT(placed[0].nodes, ElementsAre("gpu"));
  EXPECT_EQ(placed[1].run_id, 3);
  EXPECT_THAT(placed[1].nodes, ElementsAre("cpu"));
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("2 free GPU(s)"));

  Scheduler::Request too_many = Job(4, 1, 3);
  too_many.gpus_per_node = 3;
  EXPECT_EQ(scheduler.EligibleNodes(too_many, /*up_only=*/false), 0);
}

TEST(Scheduler, QueuesPlaceRunsOnTheirOwnNodes) {
  Scheduler scheduler({{"cpu", {{"kind", "cpu"}}, 100, 1000, 0, true},
                       {"gpu", {{"kind", "gpu"}}, 200, 1000, 3600, false}});
  Up(scheduler, "c1", 1, 0, {{"kind", "cpu"}});
  Up(scheduler, "g1", 1, 1, {{"kind", "gpu"}});
  Scheduler::Request gpu_run = Job(1);
  gpu_run.queue = "gpu";
  Scheduler::Request cpu_run = Job(2);  // the default queue
  Scheduler::Request second_gpu = Job(3);
  second_gpu.queue = "gpu";
  scheduler.Enqueue(gpu_run);
  scheduler.Enqueue(cpu_run);
  scheduler.Enqueue(second_gpu);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_THAT(placed[0].nodes, ElementsAre("g1"));
  EXPECT_THAT(placed[1].nodes, ElementsAre("c1"));
  EXPECT_THAT(scheduler.Reason(3), HasSubstr("of queue gpu"));
  EXPECT_THAT(scheduler.QueuesOf("g1"), ElementsAre("gpu"));
  EXPECT_EQ(scheduler.FindQueue("")->name, "cpu");
  scheduler.Allocate(9, "", {"c1"}, 0, 0, 0, 0);  // restored, no queue
  EXPECT_EQ(scheduler.Load("cpu").running_runs, 2);
  const Scheduler::QueueLoad gpu = scheduler.Load("gpu");
  EXPECT_EQ(gpu.nodes, 1);
  EXPECT_EQ(gpu.idle_nodes, 0);
  EXPECT_EQ(gpu.queued_runs, 1);
  EXPECT_EQ(gpu.running_runs, 1);
}

TEST(Scheduler, DrainingNodeGetsNothingNewAndKeepsWhatItRuns) {
  Scheduler scheduler;
  Up(scheduler, "a", 2);
  scheduler.Enqueue(Job(1));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);
  scheduler.SetDraining("a", true);
  EXPECT_TRUE(scheduler.IsDraining("a"));
  scheduler.Enqueue(Job(2));
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_EQ(scheduler.used_slots("a"), 1);
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("0 of the 1 matching node(s)"));
  scheduler.SetDraining("a", false);
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));
}

TEST(Scheduler, FlaggedNodeGetsNoRunThatAvoidsFlaggedNodes) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  Up(scheduler, "b", 1);
  Up(scheduler, "c", 1);
  scheduler.SetFlagged("b", true);
  Scheduler::Request ranked = Job(1, /*nodes=*/2);
  ranked.avoid_flagged = true;
  scheduler.Enqueue(ranked);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].nodes, ElementsAre("a", "c"));
  // A run that does not avoid them (unranked, or pinned) may use it.
  scheduler.Enqueue(Job(2));
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));
  EXPECT_EQ(scheduler.used_slots("b"), 1);
}

TEST(Scheduler, QueueWithPreflightMaxAgeWaitsForFreshPreflights) {
  Scheduler::Queue queue;
  queue.name = "fresh";
  queue.is_default = true;
  queue.preflight_max_age_s = 60;
  Scheduler scheduler({queue});
  Up(scheduler, "a", 1);
  Up(scheduler, "b", 1);
  scheduler.SetPreflightMs("a", 1'000);
  scheduler.AgePreflights(30'000);
  Scheduler::Request ranked = Job(1, /*nodes=*/2);
  ranked.queue = "fresh";
  ranked.ranked = true;
  scheduler.Enqueue(ranked);
  EXPECT_THAT(scheduler.Schedule(30'000), IsEmpty());
  EXPECT_THAT(scheduler.Reason(1), HasSubstr("with a pre-flight at most 60 s"));
  // An unranked run, or one of one node, needs none.
  Scheduler::Request single = Job(2);
  single.queue = "fresh";
  single.ranked = true;
  scheduler.Enqueue(single);
  EXPECT_THAT(Ids(scheduler.Schedule(30'000)), ElementsAre(2));
  scheduler.Deallocate(2);
  scheduler.SetPreflightMs("b", 29'000);
  EXPECT_THAT(Ids(scheduler.Schedule(30'000)), ElementsAre(1));
  scheduler.Deallocate(1);
  // A minute later a's is too old again.
  scheduler.AgePreflights(62'000);
  scheduler.Enqueue(ranked);
  EXPECT_THAT(scheduler.Schedule(62'000), IsEmpty());
}

TEST(Scheduler, RunLargerThanTheNodesUpWaitsWithoutBlocking) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.SetNode("b", Scheduler::NodeOffer{1, 0, {}});  // away
  scheduler.Enqueue(Job(1, /*nodes=*/2));
  scheduler.Enqueue(Job(2));
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));
  EXPECT_THAT(scheduler.Reason(1),
              StartsWith("Resources: needs 2 node(s) of queue default"));
  EXPECT_EQ(scheduler.EligibleNodes(Job(9, 2), /*up_only=*/false), 2);
  EXPECT_EQ(scheduler.EligibleNodes(Job(9, 1, 2), /*up_only=*/false), 0);
}

TEST(Scheduler, RequeuedRunGoesBackInSubmissionOrder) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.Enqueue(Job(5));
  scheduler.Enqueue(Job(7));
  scheduler.Enqueue(Job(3));  // requeued: older than both
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(3));
}

TEST(Scheduler, UnschedulableNodeKeepsHeldSlotsButTakesNoNewRun) {
  Scheduler scheduler;
  Up(scheduler, "a", 2);
  scheduler.Enqueue(Job(1));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);
  scheduler.SetSchedulable("a", false);  // disconnected
  EXPECT_EQ(scheduler.used_slots("a"), 1);
  scheduler.Enqueue(Job(2));
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
}

TEST(Scheduler, ExpectedStartCountsDownAsTimePasses) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.Enqueue(Limited(Job(1), 100));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);  // a until 100 s
  scheduler.Enqueue(Job(2));                    // head: a at 100 s
  EXPECT_THAT(scheduler.Schedule(10 * kSecond), IsEmpty());
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("expected to start within 90 s"));
  const int64_t passes = scheduler.passes();
  // Nothing changed but the time: within a second the count stands...
  EXPECT_THAT(scheduler.Schedule(10 * kSecond + 500), IsEmpty());
  EXPECT_EQ(scheduler.passes(), passes);
  // ...and a second later it is told again, 30 s nearer.
  EXPECT_THAT(scheduler.Schedule(40 * kSecond), IsEmpty());
  EXPECT_EQ(scheduler.passes(), passes + 1);
  EXPECT_THAT(scheduler.Reason(2), HasSubstr("expected to start within 60 s"));
}

TEST(Scheduler, PassesOnlyWhenSomethingChanged) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.Enqueue(Job(1));
  scheduler.Enqueue(Job(2));
  ASSERT_EQ(scheduler.Schedule(0).size(), 1u);
  const int64_t passes = scheduler.passes();
  scheduler.SetSchedulable("a", true);  // a heartbeat: no change
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_EQ(scheduler.passes(), passes);
  scheduler.Deallocate(1);  // slots freed: a pass
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(2));
  EXPECT_EQ(scheduler.passes(), passes + 1);
}

TEST(Scheduler, ManyWaitingRunsOfOneShapeAllGetAReason) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.Enqueue(Job(1));
  for (int64_t id = 2; id <= 2000; ++id) scheduler.Enqueue(Job(id));
  EXPECT_THAT(Ids(scheduler.Schedule(0)), ElementsAre(1));
  EXPECT_THAT(scheduler.Reason(2), StartsWith("Resources: waiting"));
  EXPECT_EQ(scheduler.Reason(2000),
            "Priority: waits behind run 2 (queue default)");
  EXPECT_EQ(scheduler.queue_length(), 1999);
}

TEST(Scheduler, FreedNodeAmongManyFullOnesTakesTheNextRun) {
  Scheduler scheduler;
  char name[8];
  for (int i = 0; i < 500; ++i) {
    std::snprintf(name, sizeof(name), "n%03d", i);
    Up(scheduler, name, 1);
    scheduler.Enqueue(Job(i + 1));
  }
  ASSERT_EQ(scheduler.Schedule(0).size(), 500u);
  scheduler.Enqueue(Job(501));
  scheduler.Enqueue(Job(502));
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(501), HasSubstr("start unknown"));

  scheduler.Deallocate(258);  // run 258 held n257
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].run_id, 501);
  EXPECT_THAT(placed[0].nodes, ElementsAre("n257"));
  EXPECT_EQ(scheduler.Reason(501), "");  // placed: no longer waits
  EXPECT_THAT(scheduler.Reason(502), StartsWith("Resources: waiting"));

  // A node that grows a slot has room again.
  Up(scheduler, "n100", 2);
  placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].nodes, ElementsAre("n100"));
}

TEST(Scheduler, CountsOfNodesUpFollowNodesComingAndGoing) {
  Scheduler scheduler;
  Up(scheduler, "a", 1);
  scheduler.Enqueue(Job(1, /*nodes=*/2));
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(1), HasSubstr("1 registered node(s) match"));

  scheduler.SetNode("b", Scheduler::NodeOffer{1, 0, {}});  // known, not up
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(1), HasSubstr("1 of the 2 matching node(s)"));

  scheduler.SetSchedulable("b", true);
  scheduler.SetDraining("a", true);
  EXPECT_THAT(scheduler.Schedule(0), IsEmpty());
  EXPECT_THAT(scheduler.Reason(1), HasSubstr("1 of the 2 matching node(s)"));

  scheduler.SetDraining("a", false);
  std::vector<Scheduler::Placement> placed = scheduler.Schedule(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].nodes, ElementsAre("a", "b"));
}

TEST(Scheduler, DequeueRemovesOnlyQueuedRuns) {
  Scheduler scheduler;
  scheduler.Enqueue(Job(7));
  EXPECT_TRUE(scheduler.Dequeue(7));
  EXPECT_FALSE(scheduler.Dequeue(7));
  EXPECT_EQ(scheduler.queue_length(), 0);
}

}  // namespace
}  // namespace hpcai500
