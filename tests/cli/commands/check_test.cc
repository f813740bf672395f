#include "cli/commands/check.h"

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methodology/registry.h"
#include "methodology/spec.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::ListNodesResponse TwoNodes() {
  v1::ListNodesResponse nodes;
  v1::Node* a = nodes.add_nodes();
  a->set_name("node-a");
  a->set_state("idle");
  a->set_slots(1);
  v1::Node* b = nodes.add_nodes();
  b->set_name("gpu-1");
  b->set_state("busy");
  b->set_slots(4);
  b->set_gpus(4);
  return nodes;
}

TEST(Check, NamesAnUnknownDownOrDrainedNodeAndPassesAnUpOne) {
  v1::ListNodesResponse nodes = TwoNodes();
  EXPECT_EQ(NodeUnavailable(nodes, "node-a"), "");
  EXPECT_EQ(NodeUnavailable(nodes, "gpu-1"), "") << "busy still takes runs";
  EXPECT_EQ(NodeUnavailable(nodes, "node-z"),
            "unknown node 'node-z' (registered: gpu-1, node-a)");
  EXPECT_EQ(NodeUnavailable(v1::ListNodesResponse(), "x"),
            "unknown node 'x' (registered: none)");
  nodes.mutable_nodes(0)->set_state("down");
  nodes.mutable_nodes(0)->set_state_reason("silent past the node timeout");
  EXPECT_EQ(NodeUnavailable(nodes, "node-a"),
            "node node-a is down: silent past the node timeout");
  nodes.mutable_nodes(1)->set_state("drained");
  nodes.mutable_nodes(1)->set_state_reason("fan");
  EXPECT_EQ(NodeUnavailable(nodes, "gpu-1"), "node gpu-1 is drained: fan");
  nodes.mutable_nodes(1)->set_state("draining");
  EXPECT_EQ(NodeUnavailable(nodes, "gpu-1"), "node gpu-1 is draining: fan");
}

TEST(Check, TheSpecIsAValidNoopPinnedToTheNodeOnEverySlot) {
  const v1::ListNodesResponse nodes = TwoNodes();
  absl::StatusOr<v1::RunSpec> cpu =
      ParseRunSpec(CheckSpecYaml(nodes.nodes(0)), Registry::Builtin());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->workload(), kNoopWorkload);
  EXPECT_EQ(cpu->constraints().at(kNodeLabel), "node-a");
  EXPECT_EQ(cpu->nodes(), 1);
  EXPECT_EQ(cpu->ranks_per_node(), 1);
  EXPECT_EQ(cpu->device(), "cpu");
  EXPECT_EQ(cpu->max_retries(), 0) << "a failure is the answer";
  absl::StatusOr<v1::RunSpec> gpu =
      ParseRunSpec(CheckSpecYaml(nodes.nodes(1)), Registry::Builtin());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->ranks_per_node(), 4);
  EXPECT_EQ(gpu->device(), "cuda") << "every GPU's rank joins NCCL";
}

TEST(Check, UsesCudaOnlyWithAGpuForEveryRank) {
  v1::Node node;
  node.set_slots(4);
  node.set_gpus(2);
  CheckLayout layout = CheckLayoutOf(node);
  EXPECT_EQ(layout.ranks, 4);
  EXPECT_EQ(layout.device, Device::kCpu) << "two GPUs for four ranks";
  node.set_gpus(4);
  EXPECT_EQ(CheckLayoutOf(node).device, Device::kCuda);
  node.set_slots(0);
  node.set_gpus(0);
  EXPECT_EQ(CheckLayoutOf(node).ranks, 1) << "a node without slots: one rank";
}

TEST(Check, PrintsOneLinePerPhaseReachedThenTheVerdict) {
  CheckReport report;
  report.node = "node-a";
  report.healthy = true;
  report.run_id = 7;
  report.state = "succeeded";
  report.device = "cpu";
  report.ranks = 1;
  report.queued_s = 0.004;
  report.started_s = 0.05;
  report.epoch_s = 0.2;
  report.exited_s = 0.6;
  report.total_s = 0.7;
  const std::string text = CheckLines(report);
  EXPECT_THAT(text, HasSubstr("check node-a: queued"));
  EXPECT_THAT(text, HasSubstr("0.004 s  run 7 placed"));
  EXPECT_THAT(text, HasSubstr("check node-a: rendezvous/epoch   0.200 s"));
  EXPECT_THAT(text, HasSubstr("joined Gloo"));
  EXPECT_THAT(text, HasSubstr("check node-a: healthy (0.700 s)\n"));

  report.healthy = false;
  report.problem = "run 7 failed: rank 0 exited with code 1";
  report.epoch_s = -1;
  report.exited_s = -1;
  const std::string failed = CheckLines(report);
  EXPECT_THAT(failed, Not(HasSubstr("rendezvous/epoch")));
  EXPECT_THAT(failed, HasSubstr("check node-a: UNHEALTHY: run 7 failed"));

  const nlohmann::json json = nlohmann::json::parse(CheckJson(report));
  EXPECT_EQ(json["node"], "node-a");
  EXPECT_EQ(json["healthy"], false);
  EXPECT_EQ(json["run_id"], 7);
  EXPECT_EQ(json["phases"]["queued_s"], 0.004);
  EXPECT_TRUE(json["phases"]["rendezvous_epoch_s"].is_null());
}

}  // namespace
}  // namespace hpcai500
