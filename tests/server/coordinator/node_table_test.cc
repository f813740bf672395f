#include "server/coordinator/node_table.h"

#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

class RecordingChannel final : public AgentChannel {
 public:
  void Send(const v1::CoordinatorMessage& message) override {
    sent.push_back(message);
  }
  std::vector<v1::CoordinatorMessage> sent;
};

v1::Register Registration(const std::string& name) {
  v1::Register request;
  request.set_name(name);
  request.set_hostname(name + ".cluster");
  request.set_slots(4);
  return request;
}

TEST(NodeTable, ARegistrationOpensASessionThatANewerOneReplaces) {
  NodeTable table;
  RecordingChannel first, second;
  bool replaced = true;
  const int64_t old_session =
      table.Connect(Registration("a"), &first, 100, &replaced).session;
  EXPECT_FALSE(replaced);
  EXPECT_EQ(table.nodes().at("a").info.address(), "a.cluster")
      << "the hostname stands in for a missing address";
  EXPECT_EQ(table.FindSession(old_session), &table.nodes().at("a"));

  const int64_t new_session =
      table.Connect(Registration("a"), &second, 200, &replaced).session;
  EXPECT_TRUE(replaced);
  EXPECT_NE(new_session, old_session);
  EXPECT_EQ(table.FindSession(old_session), nullptr);
  EXPECT_EQ(table.Disconnect(old_session), nullptr);
  EXPECT_EQ(table.connected(), 1) << "the old stream ending changes nothing";

  ASSERT_TRUE(table.Send("a", v1::CoordinatorMessage()));
  EXPECT_EQ(second.sent.size(), 1u);
  EXPECT_TRUE(first.sent.empty());
}

TEST(NodeTable, ARegistrationRecordsTheNodesInventory) {
  NodeTable table;
  RecordingChannel channel;
  bool replaced = false;
  v1::Register request = Registration("gpu-1");
  v1::Inventory* inventory = request.mutable_inventory();
  inventory->set_cpu_model("AMD EPYC 9654 96-Core Processor");
  inventory->set_driver_version("550.54.15");
  inventory->add_devices()->set_model("NVIDIA H200");
  (*inventory->mutable_versions())["nccl"] = "2.21.5";
  const v1::Node& info = table.Connect(request, &channel, 100, &replaced).info;
  EXPECT_EQ(info.inventory().SerializeAsString(),
            request.inventory().SerializeAsString());

  // A newer registration replaces it (the driver was upgraded).
  inventory->set_driver_version("560.28.03");
  table.Connect(request, &channel, 200, &replaced);
  EXPECT_EQ(table.nodes().at("gpu-1").info.inventory().driver_version(),
            "560.28.03");
}

TEST(NodeTable, ADisconnectedNodeIsKeptButGetsNoMessage) {
  NodeTable table;
  RecordingChannel channel;
  bool replaced = false;
  const int64_t session =
      table.Connect(Registration("a"), &channel, 100, &replaced).session;
  NodeTable::Node* node = table.Disconnect(session);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->session, 0);
  EXPECT_EQ(table.connected(), 0);
  EXPECT_EQ(table.nodes().size(), 1u);
  EXPECT_FALSE(table.Send("a", v1::CoordinatorMessage()));
  EXPECT_FALSE(table.Send("unknown", v1::CoordinatorMessage()));
}

TEST(NodeTable, RestoredAndPlaceholderNodesStartDisconnectedAndSeenNow) {
  NodeTable table;
  v1::Node stored;
  stored.set_name("a");
  stored.set_slots(8);
  stored.set_last_seen_ms(5);
  stored.set_connected(true);
  table.Restore(stored, /*now_ms=*/1000);
  EXPECT_EQ(table.nodes().at("a").info.last_seen_ms(), 1000);
  EXPECT_FALSE(table.nodes().at("a").info.connected());
  EXPECT_FALSE(table.AddIfUnknown("a", 2000));
  EXPECT_EQ(table.nodes().at("a").info.slots(), 8);
  EXPECT_TRUE(table.AddIfUnknown("b", 2000));
  EXPECT_EQ(table.nodes().at("b").info.last_seen_ms(), 2000);
}

TEST(NodeTable, RestoredNodeThatLeftKeepsItsReasonAndItsLastWord) {
  NodeTable table;
  v1::Node left;
  left.set_name("n1-42");
  left.set_last_seen_ms(5);
  left.set_state("down");
  left.set_state_reason("left: stopped by SIGTERM");
  table.Restore(left, /*now_ms=*/1000);
  const NodeTable::Node& node = table.nodes().at("n1-42");
  EXPECT_TRUE(node.leaving);
  EXPECT_EQ(node.leave_reason, "stopped by SIGTERM");
  EXPECT_EQ(node.info.last_seen_ms(), 1000) << "the node timeout restarts";
  EXPECT_EQ(node.LastHeardMs(), 5) << "the retention does not";

  v1::Node up;
  up.set_name("b");
  up.set_last_seen_ms(5);  // saved when it registered, heard since
  up.set_state("idle");
  table.Restore(up, /*now_ms=*/1000);
  EXPECT_FALSE(table.nodes().at("b").leaving);
  EXPECT_EQ(table.nodes().at("b").LastHeardMs(), 1000);

  RecordingChannel channel;
  bool replaced = false;
  table.Connect(Registration("n1-42"), &channel, 2000, &replaced);
  EXPECT_FALSE(table.nodes().at("n1-42").leaving);
  EXPECT_EQ(table.nodes().at("n1-42").LastHeardMs(), 2000);
}

TEST(NodeTable, RemovesOnlyADisconnectedNode) {
  NodeTable table;
  RecordingChannel channel;
  bool replaced = false;
  const int64_t session =
      table.Connect(Registration("a"), &channel, 100, &replaced).session;
  EXPECT_FALSE(table.Remove("a")) << "its agent is connected";
  EXPECT_FALSE(table.Remove("zz"));
  table.Disconnect(session);
  EXPECT_TRUE(table.Remove("a"));
  EXPECT_TRUE(table.nodes().empty());
  EXPECT_EQ(table.FindSession(session), nullptr);
}

}  // namespace
}  // namespace hpcai500
