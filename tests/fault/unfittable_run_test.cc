// A run too large for the cluster never blocks the queue: one larger than
// every registered node together is refused at submit (exit 3, naming the
// need and the capacity); one that fits only when a departed node returns
// waits with its reason while a smaller run behind it starts and ends.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

TEST(UnfittableRun, IsRefusedOrWaitsWhileARunThatFitsStarts) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartFakeAgent("node-a"));
  ASSERT_TRUE(cluster.StartFakeAgent("node-b"));

  const std::string too_big =
      cluster.WriteRunSpec("too-big", /*seed=*/1, /*nodes=*/5);
  CommandResult refused = cluster.Cli({"submit", too_big});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("needs 5 node(s) of queue default with 1 "
                             "slot(s) each; of the 2 registered node(s), 2 "
                             "can host it"),
            std::string::npos)
      << refused.err;

  cluster.StopAgent("node-b", SIGTERM);  // may come back later
  const std::string waiting = cluster.SubmitRun("two-nodes", 1, /*nodes=*/2);
  ASSERT_FALSE(waiting.empty());
  const std::string small = cluster.SubmitRun("one-node", 1, /*nodes=*/1);
  ASSERT_FALSE(small.empty());

  const std::string state = cluster.WaitForEnd(small, seconds(120));
  EXPECT_NE(state, "");
  const nlohmann::json big = cluster.ShowRun(waiting);
  EXPECT_EQ(big.value("state", ""), "RUN_STATE_QUEUED");
  EXPECT_NE(big.value("reason", "").find("Resources: needs 2 node(s)"),
            std::string::npos)
      << big.dump();

  ExpectNoneLostOrStoredTwice(
      "a 5-node run, then a 2-node run ahead of a 1-node run",
      "5 nodes refused (exit 3), 2 nodes waits (" + big.value("reason", "") +
          "), 1 node ran: " + state,
      cluster.LostEvents("node-a", small, 1, 0, /*acked_only=*/false),
      cluster.CountStoredEvents(small).stored_twice());
}

}  // namespace
}  // namespace hpcai500::testing
