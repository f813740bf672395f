// Who may do what, with real processes: hpcai500d with API tokens made by
// `hpcai500d token create` beside it, agents with agent tokens, the CLI with
// each role, and the HTTP side without and with a viewer token; and what a
// hostile client or agent tries: control characters, a connection flood.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartCoordinator());
    // Made beside the running coordinator: auth turns on with the first.
    for (auto [user, role] :
         {std::pair{"root", "admin"}, std::pair{"vera", "viewer"},
          std::pair{"alice", "operator"}, std::pair{"bob", "operator"}}) {
      tokens_[user] = cluster_.CreateToken({"--role", role, "--user", user});
    }
    tokens_["agent-a"] =
        cluster_.CreateToken({"--role", "agent", "--node", "node-a"});
    cluster_.set_cli_flags({"--token", tokens_["root"]});
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }
  CommandResult As(const std::string& user,
                   const std::vector<std::string>& args) {
    return cluster_.CliAs(tokens_[user], args);
  }
  std::string Spec() {
    return cluster_.WriteSpec(
        "smoke",
        "name: smoke\nworkload: image_classification\nconfig: "
        "fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
        "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\n"
        "precision: fp32\nseed: 1\nsystem: loopback-cpu\n");
  }

  TestCluster cluster_;
  std::map<std::string, std::string> tokens_;
};

TEST_F(Security, EachRoleDoesOnlyWhatItMayAndEveryRefusalIsAudited) {
  cluster_.set_cli_flags({});
  CommandResult anonymous = cluster_.Cli({"list"});
  cluster_.set_cli_flags({"--token", tokens_["root"]});
  EXPECT_EQ(anonymous.exit_code, 2);
  EXPECT_NE(anonymous.err.find("no token"), std::string::npos) << anonymous.err;

  ASSERT_TRUE(
      cluster_.StartAgent("node-a", 1, {"--token", tokens_["agent-a"]}));

  CommandResult viewer_submit = As("vera", {"submit", Spec()});
  EXPECT_EQ(viewer_submit.exit_code, 2);
  EXPECT_NE(viewer_submit.err.find("role viewer may not"), std::string::npos)
      << viewer_submit.err;
  EXPECT_EQ(As("vera", {"list"}).exit_code, 0);

  CommandResult submitted = As("alice", {"submit", Spec()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string run = submitted.out.substr(0, submitted.out.find('\n'));
  CommandResult shown = As("vera", {"show", run});
  EXPECT_NE(shown.out.find("user         alice"), std::string::npos)
      << shown.out;

  CommandResult bob_cancel = As("bob", {"cancel", run});
  EXPECT_EQ(bob_cancel.exit_code, 2);
  EXPECT_NE(bob_cancel.err.find("belongs to alice"), std::string::npos)
      << bob_cancel.err;
  EXPECT_EQ(As("vera", {"cancel", run}).exit_code, 2);
  CommandResult root_cancel = As("root", {"cancel", run});
  EXPECT_EQ(root_cancel.exit_code, 0) << root_cancel.err;

  EXPECT_EQ(As("alice", {"audit"}).exit_code, 2);  // admins only
  CommandResult audit = As("root", {"audit", "--json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  for (const char* expected :
       {"\"user\": \"vera\"", "\"user\": \"bob\"", "\"action\": \"submit\"",
        "\"action\": \"register\"", "\"action\": \"token_create\"",
        "\"action\": \"cancel\""}) {
    EXPECT_NE(audit.out.find(expected), std::string::npos) << expected << "\n"
                                                           << audit.out;
  }
}

TEST_F(Security,
       AnAgentTokenRegistersAsItsNodeOnlyAndANameAloneChangesNothing) {
  ASSERT_TRUE(
      cluster_.StartAgent("node-a", 1, {"--token", tokens_["agent-a"]}));
  // node-a's token used to pose as node-b, and node-a's name without a
  // token: both refused, node-a stays connected and node-b never appears.
  auto agent = [&](const std::string& name, const std::string& token) {
    std::vector<std::string> argv = {BinaryPath("hpcai500-agent"),
                                     "--coordinator",
                                     cluster_.grpc_address(),
                                     "--name",
                                     name,
                                     "--workdir",
                                     cluster_.dir() + "/posing-as-" + name};
    if (!token.empty()) {
      argv.push_back("--token");
      argv.push_back(token);
    }
    return RunCommand(argv, seconds(4));  // killed after 4 s of retrying
  };
  const CommandResult as_b = agent("node-b", tokens_["agent-a"]);
  EXPECT_NE(as_b.err.find("bound to node node-a"), std::string::npos)
      << as_b.err;
  const CommandResult impostor = agent("node-a", "");
  EXPECT_NE(impostor.err.find("no token"), std::string::npos) << impostor.err;
  CommandResult nodes = cluster_.Cli({"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("node-b"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("idle"), std::string::npos) << nodes.out;
  CommandResult audit = cluster_.Cli({"audit", "--json"});
  EXPECT_NE(audit.out.find("\"target\": \"node node-b\""), std::string::npos)
      << audit.out;
}

// A copy of node-a's agent token used elsewhere while node-a's agent is
// alive and beating: the second agent is refused (and audited) every time
// it tries, the live session stays, and node-a's run ends as it would have.
TEST_F(Security, ACopiedTokenCannotTakeOverALiveNode) {
  ASSERT_TRUE(
      cluster_.StartAgent("node-a", 1, {"--token", tokens_["agent-a"]}));
  CommandResult submitted = As("alice", {"submit", Spec()});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string run = submitted.out.substr(0, submitted.out.find('\n'));
  // The impostor: another agent process, same name and token, for 6 s (it
  // retries, backing off, the whole time).
  CommandResult impostor = RunCommand(
      {BinaryPath("hpcai500-agent"), "--coordinator", cluster_.grpc_address(),
       "--name", "node-a", "--slots", "1", "--token", tokens_["agent-a"],
       "--workdir", cluster_.dir() + "/impostor"},
      seconds(6));
  EXPECT_NE(impostor.err.find("node node-a is connected and was heard"),
            std::string::npos)
      << impostor.err;
  EXPECT_EQ(impostor.err.find("registered with coordinator"), std::string::npos)
      << impostor.err;
  // The run ends as it would have, on the real agent's only attempt (as
  // slowly as a loaded machine trains it).
  CommandResult waited = cluster_.Cli({"watch", run}, seconds(600));
  EXPECT_EQ(waited.exit_code, 0) << waited.out << waited.err;
  CommandResult shown = As("root", {"show", run, "--json"});
  EXPECT_NE(shown.out.find("\"RUN_STATE_SUCCEEDED\""), std::string::npos)
      << shown.out;
  EXPECT_EQ(shown.out.find("\"number\": 2"), std::string::npos) << shown.out;
  CommandResult audit = As("root", {"audit", "--json"});
  EXPECT_NE(audit.out.find("cannot take its name while its stream lives"),
            std::string::npos)
      << audit.out;
  std::printf(
      "FAULT a second agent with node-a's token while node-a lives: "
      "refused and audited; run %s succeeded on its one attempt\n",
      run.c_str());
}

TEST_F(Security, HttpNeedsAViewerTokenUnlessPublic) {
  int status = 0;
  cluster_.HttpGet("/api/v1/runs", &status);
  EXPECT_EQ(status, 401);
  const std::string page = cluster_.HttpGet("/", &status);
  EXPECT_EQ(status, 401);
  EXPECT_NE(page.find("viewer token"), std::string::npos);
}

// An agent whose --address carries a newline and an ESC sequence (a real
// agent: it checks no address form of its own) is refused at registration,
// and nothing it sent forges a coordinator log line or reaches a terminal
// raw.
TEST(ControlCharacters, AnAgentSendingThemIsRefusedAndForgesNoLogLine) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-ok", 1));
  const std::string forged = "I 2026-12-04T00:00:00.000Z hpcai500d forged";
  cluster.LaunchAgent("node-evil", 1,
                      {"--address", "10.0.0.9\n" + forged + "\x1b[2J"});
  const std::string log_path = cluster.dir() + "/hpcai500d.log";
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(log_path).find("holds a control character") !=
               std::string::npos;
      },
      std::chrono::seconds(30)))
      << ReadFile(log_path);
  const std::string log = ReadFile(log_path);
  EXPECT_EQ(log.find("\n" + forged), std::string::npos) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  CommandResult nodes = cluster.Cli({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_NE(nodes.out.find("node-ok"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find("node-evil"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find('\x1b'), std::string::npos) << nodes.out;
  std::printf(
      "FAULT agent address with a newline and ESC: registration "
      "refused, no forged log line, nodes lists only node-ok\n");
}

// 300 half-open connections from one address (127.0.0.2) to a real
// hpcai500d's HTTP port, sending nothing: the pages still answer another
// client (127.0.0.1) at once.
TEST(ConnectionFlood, IdleConnectionsOfOneClientLeaveThePagesUp) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  sockaddr_in server = {};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(cluster.http_port()));
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_in flooder = {};
  flooder.sin_family = AF_INET;
  flooder.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2
  std::vector<int> held;
  for (int i = 0; i < 300; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(
        ::bind(fd, reinterpret_cast<sockaddr*>(&flooder), sizeof(flooder)), 0);
    ASSERT_EQ(
        ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof(server)), 0);
    held.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  const std::string body = cluster.HttpGet("/metrics", &status);
  const double seconds_taken =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (int fd : held) ::close(fd);
  EXPECT_EQ(status, 200) << body;
  EXPECT_NE(body.find("hpcai500_nodes_known"), std::string::npos);
  EXPECT_LT(seconds_taken, 5.0);
  std::printf(
      "FAULT 300 idle HTTP connections from 127.0.0.2: /metrics from "
      "127.0.0.1 answered %d in %.2f s\n",
      status, seconds_taken);
}

TEST(SecurityDefaults, WithoutTokensHpcai500dStaysOnLoopbackUnlessInsecure) {
  TestCluster cluster;
  CommandResult refused =
      RunCommand({BinaryPath("hpcai500d"), "--grpc",
                  "0.0.0.0:" + std::to_string(FreePort()), "--http",
                  "127.0.0.1:0", "--db", cluster.dir() + "/open.db"},
                 seconds(30));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--insecure"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace hpcai500::testing
