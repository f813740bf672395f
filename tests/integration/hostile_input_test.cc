// What a hostile (or careless) user, agent or client tries against the real
// binaries (issue 31): control bytes in stored reasons, token names and
// agent flags; --help and the exit codes; a port out of range; an admin
// token posing as an agent; gRPC connections left idle; a refused second
// coordinator's files.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proto/hpcai500.grpc.pb.h"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// A reason that would print a line of its own, and an ESC sequence.
const std::string kForged = "disk\nI 2026-12-04T00:00:00.000Z forged\x1b[2J";

// Whether `text` has a line that starts with the forged line, or an ESC.
bool Forged(const std::string& text) {
  return text.find("\nI 2026-12-04T00:00:00.000Z forged") !=
             std::string::npos ||
         text.find('\x1b') != std::string::npos;
}

// How many TCP connections on this host are established with local port
// `port` (the server's side of each), from /proc/net/tcp and tcp6.
int EstablishedOnPort(int port) {
  int count = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(ReadFile(table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos || state != "01") continue;
      count += std::stoi(local.substr(colon + 1), nullptr, 16) == port;
    }
  }
  return count;
}

TEST(HostileInput, StoredReasonsPrintEscapedAndJsonStaysValid) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  CommandResult drained = cluster.Cli({"drain", "node-a", "--reason", kForged});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_FALSE(Forged(drained.out)) << drained.out;
  CommandResult started =
      cluster.Cli({"maintenance", "start", "--for", "1h", "--reason", kForged});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_FALSE(Forged(started.out)) << started.out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"nodes"},
        std::vector<std::string>{"maintenance"},
        std::vector<std::string>{"audit"}}) {
    CommandResult shown = cluster.Cli(args);
    ASSERT_EQ(shown.exit_code, 0) << args[0] << ": " << shown.err;
    EXPECT_FALSE(Forged(shown.out)) << args[0] << ":\n" << shown.out;
    EXPECT_NE(shown.out.find("disk\\nI 2026-12-04"), std::string::npos)
        << args[0] << ":\n"
        << shown.out;
  }
  // JSON keeps the text, escaped by JSON's own rules.
  CommandResult json = cluster.Cli({"nodes", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_FALSE(Forged(json.out)) << json.out;
  EXPECT_NE(json.out.find("disk\\nI 2026-12-04T00:00:00.000Z forged\\u001"),
            std::string::npos)
      << json.out;
  std::printf(
      "FAULT drain and maintenance reasons with a newline and ESC: nodes, "
      "maintenance, audit print them escaped, --json stays valid\n");
}

TEST(HostileInput, TokenNamesWithControlBytesAreRefusedAtTheDoor) {
  TestCluster cluster;
  auto token = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BinaryPath("hpcai500d"), "token", "create",
                                     "--db", cluster.db_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, seconds(30));
  };
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--role", "operator", "--user", "eve\x1b[2J"},
        std::vector<std::string>{"--role", "agent", "--node", "node\x1b[2J"},
        std::vector<std::string>{"--role", "agent", "--node", "a b"}}) {
    CommandResult refused = token(args);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_EQ(refused.out, "");
    EXPECT_EQ(refused.err.find('\x1b'), std::string::npos) << refused.err;
  }
  CommandResult made = token({"--role", "agent", "--node", "node-a"});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  CommandResult listed = RunCommand(
      {BinaryPath("hpcai500d"), "token", "list", "--db", cluster.db_path()},
      seconds(30));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("node-a"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("eve"), std::string::npos) << listed.out;
}

TEST(HostileInput, FlagErrorsEchoNoControlBytes) {
  TestCluster cluster;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--name", "node-a", "\x1b[2J\nforged"},
        std::vector<std::string>{"--name", "node\x1b[2J\nforged"},
        std::vector<std::string>{"--name", "node-a", "--slots",
                                 "2\x1b[2J\nforged"}}) {
    std::vector<std::string> argv = {BinaryPath("hpcai500-agent"),
                                     "--coordinator", "127.0.0.1:1"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    CommandResult agent = RunCommand(argv, seconds(30));
    EXPECT_EQ(agent.exit_code, 2) << agent.err;
    EXPECT_EQ(agent.err.find('\x1b'), std::string::npos) << agent.err;
    EXPECT_EQ(agent.err.find("\nforged"), std::string::npos) << agent.err;
  }
  CommandResult server =
      RunCommand({BinaryPath("hpcai500d"), "--db", cluster.dir() + "/x.db",
                  "--node-timeout-s", "9\x1b[2J"},
                 seconds(30));
  EXPECT_EQ(server.exit_code, 2) << server.err;
  EXPECT_EQ(server.err.find('\x1b'), std::string::npos) << server.err;
}

TEST(HostileInput, HelpAndExitCodes) {
  struct Case {
    std::vector<std::string> argv;
    int exit_code;
    std::string says;  // in stdout for 0, else in stderr
  };
  const std::string cli = BinaryPath("hpcai500");
  const std::string server = BinaryPath("hpcai500d");
  for (const Case& c : std::vector<Case>{
           {{cli, "drain", "--help"}, 0, "drain NODE --reason TEXT"},
           {{cli, "invalidate", "--help"}, 0, "invalidate RUN --reason TEXT"},
           {{cli, "bogus", "--help"}, 64, "unknown command 'bogus'"},
           {{cli, "token", "create", "--help"}, 64, "hpcai500d token --help"},
           {{server, "token", "create", "--help"},
            0,
            "usage: hpcai500d token create"},
           {{server, "token", "bogus", "--help"}, 2, "unknown token command"},
           {{server, "bogus", "--help"}, 2, "bogus"},
           {{server, "--help"}, 0, "exit codes: 0 stopped by SIGTERM"},
           {{server, "--bogus"}, 2, "exit codes: 0 stopped by SIGTERM"},
           {{BinaryPath("hpcai500-agent"), "--help"}, 0, "exit codes: 0"},
       }) {
    CommandResult result = RunCommand(c.argv, seconds(30));
    const std::string said = c.exit_code == 0 ? result.out : result.err;
    EXPECT_EQ(result.exit_code, c.exit_code) << c.argv[1] << ": " << said;
    EXPECT_NE(said.find(c.says), std::string::npos)
        << c.argv[1] << " " << c.argv.back() << ":\n"
        << said;
  }
  // `token create --help` is create's usage, not the three verbs'.
  CommandResult create =
      RunCommand({server, "token", "create", "--help"}, seconds(30));
  EXPECT_EQ(create.out.find("token revoke"), std::string::npos) << create.out;
}

TEST(HostileInput, GrpcPortsOutOfRangeAreRefusedBeforeAnythingIsCreated) {
  TestCluster cluster;
  for (const char* grpc : {"127.0.0.1:99999", "127.0.0.1:65536"}) {
    const std::string db = cluster.dir() + "/never.db";
    CommandResult refused = RunCommand({BinaryPath("hpcai500d"), "--grpc", grpc,
                                        "--http", "127.0.0.1:0", "--db", db},
                                       seconds(30));
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("--grpc: bad address"), std::string::npos)
        << refused.err;
    EXPECT_FALSE(std::filesystem::exists(db));
  }
}

TEST(HostileInput, AnAdminTokenCannotRegisterAsANode) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  const std::string admin =
      cluster.CreateToken({"--role", "admin", "--user", "root"});
  cluster.set_cli_flags({"--token", admin});
  // Killed after 4 s of retrying in vain.
  CommandResult agent =
      RunCommand({BinaryPath("hpcai500-agent"), "--coordinator",
                  cluster.grpc_address(), "--name", "node-x", "--token", admin,
                  "--workdir", cluster.dir() + "/admin-agent"},
                 seconds(4));
  EXPECT_NE(agent.err.find("agent token bound to its node"), std::string::npos)
      << agent.err;
  CommandResult nodes = cluster.Cli({"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_EQ(nodes.out.find("node-x"), std::string::npos) << nodes.out;
}

// Real client connections, each used for one call and then held idle: a
// coordinator with --grpc-idle-timeout-s 2 closes them (counted on the
// server's side of each), while an agent's stream, a call, keeps its own.
TEST(HostileInput, IdleGrpcConnectionsAreClosed) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator({"--grpc-idle-timeout-s", "2"}));
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  const int port = std::stoi(
      cluster.grpc_address().substr(cluster.grpc_address().rfind(':') + 1));
  constexpr int kConnections = 50;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < kConnections; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // one each
    channels.push_back(grpc::CreateCustomChannel(
        cluster.grpc_address(), grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + seconds(30));
    v1::ListNodesResponse nodes;
    const grpc::Status status =
        v1::ClientService::NewStub(channels.back())
            ->ListNodes(&context, v1::ListNodesRequest(), &nodes);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const int held = EstablishedOnPort(port);
  EXPECT_GE(held, kConnections);  // each channel its own, and the agent's
  const auto start = std::chrono::steady_clock::now();
  // Only the agent's stream stays.
  EXPECT_TRUE(
      WaitFor([&] { return EstablishedOnPort(port) <= 1; }, seconds(60)))
      << EstablishedOnPort(port) << " of " << held << " still open";
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(EstablishedOnPort(port), 1);
  CommandResult nodes = cluster.Cli({"nodes"});
  EXPECT_NE(nodes.out.find("idle"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find("down"), std::string::npos) << nodes.out;
  std::printf(
      "FAULT %d idle gRPC connections, --grpc-idle-timeout-s 2: %d held, "
      "closed within %.1f s but the agent's stream\n",
      kConnections, held, took);
}

TEST(HostileInput, ARefusedSecondCoordinatorLeavesNoFilesOfItsOwn) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  auto second = [&](const std::string& grpc, const std::string& db) {
    return RunCommand({BinaryPath("hpcai500d"), "--grpc", grpc, "--http",
                       "127.0.0.1:0", "--db", db},
                      seconds(30));
  };
  const std::string link = cluster.dir() + "/symlinked.db";
  std::filesystem::create_symlink(cluster.db_path(), link);
  CommandResult on_link =
      second("127.0.0.1:" + std::to_string(FreePort()), link);
  EXPECT_EQ(on_link.exit_code, 1) << on_link.err;
  EXPECT_NE(on_link.err.find("in use by another hpcai500d"), std::string::npos)
      << on_link.err;
  EXPECT_FALSE(std::filesystem::exists(link + ".lock"));
  EXPECT_TRUE(std::filesystem::exists(cluster.db_path() + ".lock"));

  const std::string other = cluster.dir() + "/other.db";
  CommandResult on_port = second(cluster.grpc_address(), other);
  EXPECT_EQ(on_port.exit_code, 1) << on_port.err;
  EXPECT_NE(on_port.err.find("cannot listen there"), std::string::npos)
      << on_port.err;
  for (const char* suffix : {"", ".lock", ".token-key", "-wal", "-shm"}) {
    EXPECT_FALSE(std::filesystem::exists(other + suffix)) << suffix;
  }
  EXPECT_EQ(cluster.Cli({"list"}).exit_code, 0);  // the first serves on
}

}  // namespace
}  // namespace hpcai500::testing
