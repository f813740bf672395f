// A torn line in a rank's event file is no wall: it is stored as an error
// row under its seq, the ack point moves on, the run ends and every good
// line is stored once, even with more events after it than the agent keeps
// unacknowledged.
#include <gtest/gtest.h>

#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

TEST(TornEventLine, IsStoredAsAnErrorAndTheRunStillEnds) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartFakeAgent("node-a"));
  const std::string run_id = cluster.SubmitRun("torn", /*seed=*/2);
  ASSERT_FALSE(run_id.empty());

  const std::string state = cluster.WaitForEnd(run_id, seconds(120));
  EXPECT_NE(state, "");
  EXPECT_NE(state, "RUN_STATE_RUNNING");
  // The agent saw every event acknowledged.
  EXPECT_TRUE(cluster.WaitUntilAllAcked("node-a", run_id, 1, 0, seconds(30)));

  StoredEventCounts stored = cluster.CountStoredEvents(run_id);
  EXPECT_EQ(stored.max_seq, FaultCluster::kWorkerEvents);
  EXPECT_EQ(stored.distinct, FaultCluster::kWorkerEvents);  // no gap
  EXPECT_EQ(stored.errors, 1);                              // the torn line
  const int64_t good_lines = FaultCluster::kWorkerEvents - 1;
  ExpectNoneLostOrStoredTwice(
      "torn event line (seq 3 of " +
          std::to_string(FaultCluster::kWorkerEvents) + ")",
      "stored as " + std::to_string(stored.errors) + " error row, run ended " +
          state,
      good_lines - (stored.distinct - stored.errors), stored.stored_twice());
}

}  // namespace
}  // namespace hpcai500::testing
