#include "agent/options.h"

#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

TEST(ParseAgentArgs, FillsDefaults) {
  absl::StatusOr<AgentOptions> options =
      ParseAgentArgs({"--coordinator", "127.0.0.1:7500", "--name", "n1"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->slots, std::max(1, CountGpus()));
  EXPECT_EQ(options->address, "127.0.0.1");
  EXPECT_EQ(options->workdir.back(), '1');
  EXPECT_NE(options->workdir.find("/hpcai500-agent-n1"), std::string::npos);
  EXPECT_EQ(options->workdir.front(), '/');
  EXPECT_NE(options->worker_path.find("/hpcai500-worker"), std::string::npos);
  EXPECT_GE(options->cpus, 1);
}

TEST(ParseAgentArgs, ReadsEveryFlag) {
  TempDir dir;
  AppendToFile(dir.path() + "/token", "s3cret\n");
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator=h:1", "--name", "gpu-01", "--slots", "8", "--workdir",
       dir.path() + "/w", "--address", "10.1.2.3", "--worker", "/opt/w",
       "--labels", "rack=a,zone=b", "--auth-token-file", dir.path() + "/token",
       "--kill-grace-seconds", "3"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->slots, 8);
  EXPECT_EQ(options->workdir, dir.path() + "/w");
  EXPECT_EQ(options->worker_path, "/opt/w");
  EXPECT_EQ(options->labels.at("zone"), "b");
  EXPECT_EQ(options->auth_token, "s3cret");
  EXPECT_EQ(options->kill_grace_ms, 3000);
}

TEST(ParseAgentArgs, RefusalsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  };
  for (const Case& c : std::vector<Case>{
           {{"--name", "n"}, "--coordinator"},
           {{"--coordinator", "h:1"}, "--name"},
           {{"--coordinator", "h:1", "--name", "../x"}, "--name"},
           {{"--coordinator", "h:1", "--name", "n", "--slots", "0"}, "--slots"},
           {{"--coordinator", "h:1", "--name", "n", "--labels", "novalue"},
            "--labels"},
           {{"--coordinator", "h:1", "--name", "n", "--bogus", "1"}, "--bogus"},
           {{"--coordinator", "h:1", "--name"}, "--name"},
           {{"--coordinator", "h:1", "--name", "n", "--auth-token-file",
             "/nonexistent/token"},
            "--auth-token-file"}}) {
    absl::StatusOr<AgentOptions> options = ParseAgentArgs(c.args);
    ASSERT_FALSE(options.ok()) << c.flag;
    EXPECT_NE(options.status().message().find(c.flag), std::string::npos)
        << options.status();
  }
}

}  // namespace
}  // namespace hpcai500::agent
