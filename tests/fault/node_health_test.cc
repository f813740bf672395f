// Fault: one node of three is slow (its agent passes the worker's test
// slowdown on, so that its pre-flight's repetitions and its training steps
// take four times as long). Pre-flight flags and drains it with its
// figures; after `resume`, a three-node run names it a straggler (an
// incident on the run and the node, flagged and drained again); the next
// two-node run is placed without it. Real hpcai500d, agents, workers and
// CLI on loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

// The node named `name` of `nodes --json`; null when it is not there.
Json NodeOf(FaultCluster& cluster, const std::string& name) {
  CommandResult nodes = cluster.Cli({"nodes", "--json"});
  const Json parsed = Json::parse(nodes.out, nullptr, false);
  if (!parsed.is_object()) return nullptr;
  for (const Json& node : parsed.value("nodes", Json::array())) {
    if (node.value("name", "") == name) return node;
  }
  return nullptr;
}

TEST(NodeHealthFault, SlowNodeFlaggedDrainedAndAvoided) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator({"--drain-on-flag"}));
  ASSERT_TRUE(cluster.StartAgent("node-a", /*slots=*/1));
  ASSERT_TRUE(cluster.StartAgent("node-b", /*slots=*/1));
  ASSERT_TRUE(cluster.StartSlowAgent("node-c", /*slow_step_pct=*/300));

  // 1. Pre-flights of every node, a few rounds at most (a node is compared
  // with its class's recent pre-flights): node-c's figures are a quarter
  // of its class's; it is flagged and drained, node-a and node-b never are.
  bool flagged = false;
  std::string figures;
  for (int round = 1; round <= 3 && !flagged; ++round) {
    CommandResult preflight = cluster.Cli({"preflight", "--json"}, seconds(90));
    const Json results = Json::parse(preflight.out, nullptr, false);
    ASSERT_TRUE(results.is_object()) << preflight.out << preflight.err;
    ASSERT_EQ(results.value("results", Json::array()).size(), 3u);
    for (const Json& r : results["results"]) {
      const std::string node = r.value("node", "");
      EXPECT_EQ(r.value("error", ""), "") << node;
      // Bounded: under 30 s a node, LibTorch's start included.
      EXPECT_LT(r.value("seconds", 99.0), 30.0) << node;
      EXPECT_GT(r["figures"].value("gemm_gflops", 0.0), 0.0) << node;
      EXPECT_GT(r["figures"].value("memory_gbps", 0.0), 0.0) << node;
      EXPECT_GT(r["figures"].value("allreduce_busbw_gbps", 0.0), 0.0) << node;
      if (node != "node-c") {
        EXPECT_FALSE(r.value("flagged", false)) << r.dump();
      } else if (r.value("flagged", false)) {
        flagged = true;
        EXPECT_TRUE(r.value("drained", false));
      }
      figures += "round " + std::to_string(round) + " " + node + " " +
                 r["figures"].dump() + "; ";
    }
    EXPECT_EQ(preflight.exit_code, flagged ? 2 : 0) << preflight.err;
  }
  EXPECT_TRUE(flagged) << figures;
  Json c = NodeOf(cluster, "node-c");
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c.value("state", ""), "drained");
  // The evidence names the figures that flagged it.
  EXPECT_EQ(c.value("state_reason", "").rfind("flagged by preflight: ", 0), 0u)
      << c.dump();
  EXPECT_NE(c.value("flag", ""), "");
  EXPECT_EQ(NodeOf(cluster, "node-a").value("flag", ""), "");

  // 2. Resumed (the flag cleared), node-c takes part in a three-node run
  // and is named its straggler.
  ASSERT_EQ(cluster.Cli({"resume", "node-c"}).exit_code, 0);
  EXPECT_EQ(NodeOf(cluster, "node-c").value("flag", ""), "");
  const std::string run = cluster.SubmitRun("straggling", /*seed=*/1, 3);
  ASSERT_NE(run, "");
  ASSERT_EQ(cluster.WaitForEnd(run, seconds(330)), "RUN_STATE_SUCCEEDED");
  const Json shown = cluster.ShowRun(run);
  ASSERT_TRUE(shown.contains("incidents")) << shown.dump();
  ASSERT_EQ(shown["incidents"].size(), 1u) << shown["incidents"].dump();
  const Json incident = shown["incidents"][0];
  EXPECT_EQ(incident.value("node", ""), "node-c");
  EXPECT_EQ(incident.value("kind", ""), "straggler");
  EXPECT_NE(incident.value("detail", "").find("slower than its peers"),
            std::string::npos);
  c = NodeOf(cluster, "node-c");
  EXPECT_EQ(c.value("state", ""), "drained");
  EXPECT_NE(c.value("state_reason", "").find("straggler: rank"),
            std::string::npos)
      << c.dump();
  // Its history: the pre-flight's incident and the straggler's.
  EXPECT_EQ(c.value("incidents", 0), 2);

  // 3. The next multi-node run goes to the two healthy nodes.
  const std::string next = cluster.SubmitRun("after", /*seed=*/1, 2);
  ASSERT_NE(next, "");
  ASSERT_EQ(cluster.WaitForEnd(next, seconds(180)), "RUN_STATE_SUCCEEDED");
  const Json placed = cluster.ShowRun(next)["attempts"][0]["nodes"];
  EXPECT_EQ(placed, Json::array({"node-a", "node-b"})) << placed.dump();

  PrintFaultFigures("slow node (steps and repetitions four times as long)",
                    "flagged and drained by pre-flight and as a straggler; "
                    "next run placed on node-a, node-b",
                    figures + "straggler: " + incident.value("detail", ""));
}

}  // namespace
}  // namespace hpcai500::testing
