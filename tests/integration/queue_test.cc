// The shared-cluster queue with real processes: hpcai500d with a queues
// file and API tokens, two labelled agents, and the CLI as an admin and two
// operators: drain and resume, hold and release (own runs only), queues and
// constraints, and the audit rows of each.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string queues =
        cluster_.WriteSpec("queues",
                           "queues:\n  - name: batch\n    default: true\n"
                           "  - name: rack2\n    nodes: {rack: \"2\"}\n"
                           "    priority: 300\n    max_priority: 500\n");
    ASSERT_TRUE(cluster_.StartCoordinator({"--queues", queues}));
    for (const char* user : {"alice", "bob"}) {
      tokens_[user] =
          cluster_.CreateToken({"--role", "operator", "--user", user});
    }
    tokens_["root"] =
        cluster_.CreateToken({"--role", "admin", "--user", "root"});
    for (const char* node : {"node-a", "node-b"}) {
      tokens_[node] = cluster_.CreateToken(
          {"--role", "agent", "--user", node, "--node", node});
    }
    cluster_.set_cli_flags({"--token", tokens_["root"]});
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }
  CommandResult As(const std::string& user,
                   const std::vector<std::string>& args) {
    return cluster_.CliAs(tokens_[user], args);
  }
  nlohmann::json Show(const std::string& run) {
    CommandResult shown = cluster_.Cli({"show", run, "--json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    return nlohmann::json::parse(shown.out, nullptr, false);
  }
  std::string Spec(const std::string& extra) {
    return cluster_.WriteSpec(
        "smoke",
        "name: smoke\nworkload: image_classification\nconfig: "
        "fashion_mnist_smoke\nlevel: system\nnodes: 1\nranks_per_node: 1\n"
        "device: cpu\nbatch_size: 64\nprecision: fp32\nseed: 1\nepochs: 1\n"
        "system: loopback-cpu\n" +
            extra);
  }

  TestCluster cluster_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(QueueTest, DrainHoldReleaseAndConstraintsWorkLikeSlurms) {
  ASSERT_TRUE(cluster_.StartAgent(
      "node-a", 1, {"--labels", "rack=1", "--token", tokens_["node-a"]}));
  ASSERT_TRUE(cluster_.StartAgent(
      "node-b", 1, {"--labels", "rack=2", "--token", tokens_["node-b"]}));
  CommandResult queues = cluster_.Cli({"queues"});
  ASSERT_EQ(queues.exit_code, 0) << queues.err;
  EXPECT_NE(queues.out.find("batch*"), std::string::npos) << queues.out;
  EXPECT_NE(queues.out.find("rack=2"), std::string::npos) << queues.out;

  // A constraint no node meets is refused at submit, naming it.
  CommandResult nowhere =
      As("alice", {"submit", Spec("constraints: [rack=9]\n")});
  EXPECT_EQ(nowhere.exit_code, 3) << nowhere.err;
  EXPECT_NE(nowhere.err.find("labelled rack=9"), std::string::npos)
      << nowhere.err;

  EXPECT_EQ(As("alice", {"drain", "node-a", "--reason", "x"}).exit_code, 2);
  ASSERT_EQ(cluster_.Cli({"drain", "node-a", "--reason", "fan"}).exit_code, 0);
  ASSERT_EQ(cluster_.Cli({"drain", "node-b", "--reason", "bios"}).exit_code, 0);
  CommandResult submitted = As("alice", {"submit", Spec("queue: rack2\n")});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string run = submitted.out.substr(0, submitted.out.find('\n'));
  nlohmann::json waiting = Show(run);
  EXPECT_EQ(waiting.value("state", ""), "RUN_STATE_QUEUED");
  EXPECT_EQ(waiting.value("priority", 0), 300);
  EXPECT_NE(waiting.value("reason", "").find("Resources"), std::string::npos)
      << waiting.dump();

  CommandResult bob_hold = As("bob", {"hold", run});
  EXPECT_EQ(bob_hold.exit_code, 2);
  EXPECT_NE(bob_hold.err.find("belongs to alice"), std::string::npos)
      << bob_hold.err;
  ASSERT_EQ(As("alice", {"hold", run}).exit_code, 0);
  ASSERT_EQ(cluster_.Cli({"resume", "node-b"}).exit_code, 0);
  nlohmann::json held = Show(run);
  EXPECT_EQ(held.value("state", ""), "RUN_STATE_QUEUED");
  EXPECT_NE(held.value("reason", "").find("Held: by alice"), std::string::npos)
      << held.dump();
  CommandResult nodes = cluster_.Cli({"nodes", "--json"});
  EXPECT_NE(nodes.out.find("\"state\": \"drained\""), std::string::npos)
      << nodes.out;

  ASSERT_EQ(As("alice", {"release", run}).exit_code, 0);
  std::string state;
  ASSERT_TRUE(WaitFor(
      [&] {
        state = Show(run).value("state", "");
        return state == "RUN_STATE_SUCCEEDED" || state == "RUN_STATE_FAILED";
      },
      seconds(180)))
      << state;
  nlohmann::json done = Show(run);
  EXPECT_EQ(done.value("state", ""), "RUN_STATE_SUCCEEDED") << done.dump();
  EXPECT_EQ(done["attempts"][0]["nodes"][0], "node-b") << done.dump();

  CommandResult audit = cluster_.Cli({"audit", "--json", "--limit", "100"});
  for (const char* expected :
       {"\"action\": \"drain\"", "\"action\": \"resume\"",
        "\"action\": \"hold\"", "\"action\": \"release\""}) {
    EXPECT_NE(audit.out.find(expected), std::string::npos) << expected;
  }
}

}  // namespace
}  // namespace hpcai500::testing
