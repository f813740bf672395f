// ParseAgentArgs and the agent's usage text: defaults, and each flag's
// refusals.
#include "agent/options.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

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
  EXPECT_EQ(options->checkpoint_root, options->workdir + "/checkpoints");
  EXPECT_FALSE(options->shared_checkpoints);
  EXPECT_FALSE(options->leave_on_stop);  // workers outlive a stopped agent
}

TEST(ParseAgentArgs, LeaveOnStopMakesAPilotAgent) {
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator", "h:1", "--name", "n1-1234", "--leave-on-stop"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->leave_on_stop);
  EXPECT_NE(std::string(kAgentUsage).find("--leave-on-stop"),
            std::string::npos);
}

TEST(ParseAgentArgs, ReadsTheCheckpointRootAndMakesItAbsolute) {
  TempDir dir;
  const std::string relative =
      std::filesystem::relative(dir.path(), std::filesystem::current_path())
          .string();
  ASSERT_NE(relative.front(), '/');
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator", "h:1", "--name", "n", "--checkpoint-root",
       relative + "/ckpt/", "--shared-checkpoints"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->checkpoint_root, dir.path() + "/ckpt");
  EXPECT_TRUE(options->shared_checkpoints);

  options = ParseAgentArgs({"--coordinator", "h:1", "--name", "n",
                            "--checkpoint-root=/lustre/ckpt"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->checkpoint_root, "/lustre/ckpt");
  EXPECT_FALSE(options->shared_checkpoints);
}

TEST(ParseAgentArgs, SharedCheckpointsNeedAnExplicitRoot) {
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator", "h:1", "--name", "n", "--shared-checkpoints"});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(options.status().message().rfind(
                "--shared-checkpoints: needs --checkpoint-root", 0),
            0u)
      << options.status();
}

TEST(ParseAgentArgs, LauncherProgramsAreFoundOnPathOrKeptAsGiven) {
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator", "h:1", "--name", "n", "--mpirun", "sh",
       "--mpirun-rsh-agent", "/opt/rsh", "--srun", "no-such-srun-here"});
  ASSERT_TRUE(options.ok()) << options.status();
  // execve searches no PATH: a bare name is resolved at start-up.
  EXPECT_EQ(options->mpirun.front(), '/') << options->mpirun;
  EXPECT_EQ(options->mpirun.substr(options->mpirun.rfind('/')), "/sh");
  EXPECT_EQ(options->mpirun_rsh_agent, "/opt/rsh");
  EXPECT_EQ(options->srun, "no-such-srun-here");
}

TEST(AgentUsage, NamesTheCheckpointFlags) {
  const std::string usage = kAgentUsage;
  EXPECT_NE(usage.find("--checkpoint-root DIR"), std::string::npos);
  EXPECT_NE(usage.find("--shared-checkpoints"), std::string::npos);
}

TEST(AgentUsage, NamesTheNetworkAndEnvironmentFlags) {
  const std::string usage = kAgentUsage;
  EXPECT_NE(usage.find("--iface NAME"), std::string::npos);
  EXPECT_NE(usage.find("GLOO_SOCKET_IFNAME"), std::string::npos);
  EXPECT_NE(usage.find("--env NAME"), std::string::npos);
}

TEST(ParseAgentArgs, ReadsEveryFlag) {
  TempDir dir;
  AppendToFile(dir.path() + "/token", "s3cret\n");
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator=h:1", "--name", "gpu-01", "--slots", "8", "--workdir",
       dir.path() + "/w", "--address", "10.1.2.3", "--worker", "/opt/w",
       "--labels", "rack=a,zone=b", "--token-file", dir.path() + "/token",
       "--kill-grace-seconds", "3"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->slots, 8);
  EXPECT_EQ(options->workdir, dir.path() + "/w");
  EXPECT_EQ(options->worker_path, "/opt/w");
  EXPECT_EQ(options->labels.at("zone"), "b");
  EXPECT_EQ(options->auth_token, "s3cret");
  EXPECT_EQ(options->kill_grace_ms, 3000);
}

TEST(ParseAgentArgs, IfaceWithoutAddressTakesTheInterfacesIpv4Address) {
  absl::StatusOr<AgentOptions> options =
      ParseAgentArgs({"--coordinator", "h:1", "--name", "n", "--iface", "lo"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->iface, "lo");
  EXPECT_EQ(options->address.rfind("127.", 0), 0u) << options->address;

  options = ParseAgentArgs({"--coordinator", "h:1", "--name", "n", "--iface",
                            "lo", "--address", "10.9.8.7"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->address, "10.9.8.7");
}

TEST(ParseAgentArgs, EnvNamesAreRepeatable) {
  absl::StatusOr<AgentOptions> options =
      ParseAgentArgs({"--coordinator", "h:1", "--name", "n", "--env",
                      "SITE_LICENSE", "--env", "_x9"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->worker_env_names,
            (std::vector<std::string>{"SITE_LICENSE", "_x9"}));
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
           {{"--coordinator", "h:1", "--name", "n", "--labels", "node=m"},
            "--labels"},  // every node's own name, set by the coordinator
           {{"--coordinator", "h:1", "--name", "n", "--bogus", "1"}, "--bogus"},
           {{"--coordinator", "h:1", "--name"}, "--name"},
           {{"--coordinator", "h:1", "--name", "n", "--token-file",
             "/nonexistent/token"},
            "--token-file"},
           {{"--coordinator", "h:1", "--name", "n", "--name", "m"}, "--name"},
           {{"--coordinator", "h:1", "--name", "n", "--address="}, "--address"},
           {{"--coordinator", "h:1", "--name", "n", "--iface", "no-such-if0"},
            "--iface"},
           {{"--coordinator", "h:1", "--name", "n", "--env", "1BAD"}, "--env"},
           {{"--coordinator", "h:1", "--name", "n", "--env", "A=B"}, "--env"},
           {{"--coordinator", "h:1", "--name", "n", "--checkpoint-root="},
            "--checkpoint-root"},
           {{"--coordinator", "h:1", "--name", "n", "--checkpoint-root", "/a",
             "--checkpoint-root", "/b"},
            "--checkpoint-root"},
           {{"--coordinator", "h:1", "--name", "n", "--checkpoint-root", "/a",
             "--shared-checkpoints=yes"},
            "shared-checkpoints"},  // a switch takes no value
           {{"--coordinator", "h:1", "--name", "n", "--token", "t",
             "--token-file", "f"},
            "--token"}}) {
    absl::StatusOr<AgentOptions> options = ParseAgentArgs(c.args);
    ASSERT_FALSE(options.ok()) << c.flag;
    EXPECT_NE(options.status().message().find(c.flag), std::string::npos)
        << options.status();
  }
}

TEST(ParseAgentArgs, TlsFilesAreCheckedAtStartUpNamingTheFlag) {
  const std::vector<std::string> base = {"--coordinator", "h:1", "--name", "n"};
  auto refusal = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    absl::StatusOr<AgentOptions> options = ParseAgentArgs(extra);
    return options.ok() ? std::string("<ok>")
                        : std::string(options.status().message());
  };
  EXPECT_EQ(refusal({"--tls-ca", "/nonexistent/ca.pem"})
                .rfind("--tls-ca /nonexistent/ca.pem: cannot read", 0),
            0u);
  EXPECT_EQ(refusal({"--tls-cert", "c.pem", "--tls-key", "k.pem"})
                .rfind("--tls-cert needs --tls-ca", 0),
            0u);
  EXPECT_EQ(refusal({"--tls-ca", "ca.pem", "--tls-cert", "c.pem"}),
            "--tls-cert needs --tls-key");
  absl::StatusOr<AgentOptions> plain = ParseAgentArgs(base);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->tls.ca_pem.empty());  // no TLS without --tls-ca
}

TEST(ParseAgentArgs, TokenComesFromFlagThenFileThenEnvironment) {
  TempDir dir;
  AppendToFile(dir.path() + "/token", "from-file\n");
  const std::vector<std::string> base = {"--coordinator", "h:1", "--name", "n"};
  auto token = [&](std::vector<std::string> extra,
                   std::optional<std::string> env) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<AgentOptions> options = ParseAgentArgs(args, env);
    EXPECT_TRUE(options.ok()) << options.status();
    return options.ok() ? options->auth_token : "<error>";
  };
  EXPECT_EQ(token({"--token", "inline"}, "from-env"), "inline");
  EXPECT_EQ(token({"--token-file", dir.path() + "/token"}, "from-env"),
            "from-file");
  EXPECT_EQ(token({}, "from-env"), "from-env");
  EXPECT_EQ(token({}, std::nullopt), "");
}

std::vector<std::string> WithData(std::vector<std::string> data_args) {
  std::vector<std::string> args = {"--coordinator", "h:1", "--name", "n"};
  args.insert(args.end(), data_args.begin(), data_args.end());
  return args;
}

TEST(ParseAgentArgs, ReadsOneAbsoluteDataDirectoryPerDataset) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/imagenet");
  std::filesystem::create_directories(dir.path() + "/cifar");
  const std::string relative =
      std::filesystem::relative(dir.path() + "/cifar",
                                std::filesystem::current_path())
          .string();
  ASSERT_NE(relative.front(), '/');
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      WithData({"--data", "imagenet=" + dir.path() + "/imagenet/",
                "--data=cifar10=" + relative}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->data_dirs, (std::map<std::string, std::string>{
                                    {"cifar10", dir.path() + "/cifar"},
                                    {"imagenet", dir.path() + "/imagenet"}}));
}

TEST(ParseAgentArgs, NoDataFlagLeavesEveryDatasetToTheRegistry) {
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(WithData({}));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->data_dirs.empty());
}

TEST(ParseAgentArgs, DataRefusalsNameTheFlagAndTheProblem) {
  TempDir dir;
  AppendToFile(dir.path() + "/file", "x");
  struct Case {
    std::vector<std::string> data_args;
    std::string problem;
  };
  for (const Case& c : std::vector<Case>{
           {{"--data", "imagenet"}, "expected DATASET=DIR, got 'imagenet'"},
           {{"--data", "=" + dir.path()}, "expected DATASET=DIR"},
           {{"--data", "imagenet="}, "expected DATASET=DIR"},
           {{"--data"}, "missing"},
           {{"--data", "mnist=" + dir.path()}, "dataset 'mnist'"},
           {{"--data", "synthetic=" + dir.path()}, "dataset 'synthetic'"},
           {{"--data", "cifar10=" + dir.path(), "--data",
             "cifar10=" + dir.path()},
            "dataset 'cifar10' given twice"},
           {{"--data", "imagenet=" + dir.path() + "/missing"},
            dir.path() + "/missing is not an existing directory"},
           {{"--data", "imagenet=" + dir.path() + "/file"},
            dir.path() + "/file is not an existing directory"}}) {
    absl::StatusOr<AgentOptions> options =
        ParseAgentArgs(WithData(c.data_args));
    ASSERT_FALSE(options.ok()) << c.problem;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(options.status().message().rfind("--data: ", 0), 0u)
        << options.status();
    EXPECT_NE(options.status().message().find(c.problem), std::string::npos)
        << options.status();
  }
}

TEST(ParseAgentArgs, UnknownDatasetRefusalListsTheLocatableOnes) {
  absl::StatusOr<AgentOptions> options =
      ParseAgentArgs(WithData({"--data", "mnist=/tmp"}));
  ASSERT_FALSE(options.ok());
  EXPECT_NE(options.status().message().find(
                "(known: cifar10, extreme_weather, fashion_mnist, imagenet)"),
            std::string::npos)
      << options.status();
}

}  // namespace
}  // namespace hpcai500::agent
