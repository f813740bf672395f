// `hpcai500 regress` on a suite with real processes: a coordinator, two
// agents and workers that train. The suite passes twice unchanged, and a
// worker slowed on purpose (the test-only $HPCAI500_TEST_SLOW_STEP_PCT, which
// one agent passes on with --env) makes it fail with exit 1 and a JUnit
// failure naming the slowed spec.
#include <cstdlib>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr char kSlowVar[] = "HPCAI500_TEST_SLOW_STEP_PCT";

// One Fashion-MNIST epoch on one rank, pinned to the agent labelled `lane`.
std::string TinySpec(const std::string& name, const std::string& lane) {
  return "  - name: " + name +
         "\n    workload: image_classification\n"
         "    config: fashion_mnist_smoke\n    level: system\n    nodes: 1\n"
         "    ranks_per_node: 1\n    device: cpu\n    batch_size: 64\n"
         "    precision: fp32\n    epochs: 1\n    seed: 3\n"
         "    system: loopback-cpu\n    constraints: [lane=" +
         lane + "]\n";
}

class RegressSuite : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
    ::unsetenv(kSlowVar);
  }

  // (Re)starts the agent of the "slow" lane with its workers' steps slowed
  // by `pct` percent of their own time (0: not at all).
  bool StartSlowLaneAgent(int pct) {
    cluster_.StopAgent("node-slow", SIGTERM);
    ::setenv(kSlowVar, std::to_string(pct).c_str(), 1);
    const bool started = cluster_.StartAgent(
        "node-slow", 1, {"--labels", "lane=slow", "--env", kSlowVar});
    ::unsetenv(kSlowVar);
    return started;
  }

  // The suite with every report; the band is the fixed one (two earlier
  // runs are too few to learn from), wide enough for a shared machine's
  // noise.
  CommandResult Regress(const std::string& suite, const std::string& junit) {
    return cluster_.Cli({"regress", suite, "--metric", "throughput", "--metric",
                         "valid_flops", "--tolerance", "30", "--junit", junit,
                         "--markdown", cluster_.dir() + "/summary.md",
                         "--json-file", cluster_.dir() + "/report.json"},
                        seconds(480));
  }

  TestCluster cluster_;
};

TEST_F(RegressSuite, PassesTwiceUnchangedAndFailsNamingTheSlowedSpec) {
  // The suite's two runs train at the same time. On a shared pair of cores
  // the slowed worker's sleeps would hand its core to the plain one (and the
  // plain one's end hand both to the slowed one), so each lane's agent, and
  // the workers it forks, keeps to a core of its own.
  if (std::thread::hardware_concurrency() >= 2) {
    cluster_.set_agent_prefix("node-plain", {"/usr/bin/taskset", "-c", "0"});
    cluster_.set_agent_prefix("node-slow", {"/usr/bin/taskset", "-c", "1"});
  }
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-plain", 1, {"--labels", "lane=plain"}));
  ASSERT_TRUE(StartSlowLaneAgent(0));
  const std::string suite =
      cluster_.WriteSpec("suite", "suite: tiny-nightly\nspecs:\n" +
                                      TinySpec("tiny-plain", "plain") +
                                      TinySpec("tiny-slow", "slow"));
  const std::string junit = cluster_.dir() + "/regress.xml";

  CommandResult first = Regress(suite, junit);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("starts the series"), std::string::npos)
      << first.out;
  CommandResult second = Regress(suite, junit);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  Json report = Json::parse(ReadFile(cluster_.dir() + "/report.json"), nullptr,
                            /*allow_exceptions=*/false);
  ASSERT_TRUE(report.is_object()) << second.out;
  EXPECT_EQ(report["regressed"], false);
  ASSERT_EQ(report["specs"].size(), 2u);
  const Json& plain = report["specs"][0];
  EXPECT_EQ(plain["name"], "tiny-plain");
  ASSERT_EQ(plain["baseline"]["run_ids"].size(), 1u) << plain.dump();
  // Unchanged: not regressed (a busy machine may make it "improved").
  EXPECT_NE(plain["metrics"][0]["verdict"], "regressed") << plain.dump();
  EXPECT_NE(plain["metrics"][0]["verdict"], "no_baseline") << plain.dump();
  std::string xml = ReadFile(junit);
  EXPECT_NE(xml.find("failures=\"0\""), std::string::npos) << xml;

  // The first run of tiny-plain becomes its promoted baseline.
  const std::string promoted =
      std::to_string(plain["baseline"]["run_ids"][0].get<int64_t>());
  CommandResult promote = cluster_.Cli({"baseline", "promote", promoted});
  ASSERT_EQ(promote.exit_code, 0) << promote.out << promote.err;

  // Each step takes twice as long: throughput halves.
  ASSERT_TRUE(StartSlowLaneAgent(100));
  CommandResult slowed = Regress(suite, junit);
  EXPECT_EQ(slowed.exit_code, 1) << slowed.out << slowed.err;
  EXPECT_NE(slowed.out.find("promoted run " + promoted), std::string::npos)
      << slowed.out;
  EXPECT_NE(slowed.out.find("REGRESSED throughput: dropped"), std::string::npos)
      << slowed.out;
  xml = ReadFile(junit);
  EXPECT_NE(xml.find("<testcase classname=\"hpcai500.regress.tiny-slow\" "
                     "name=\"throughput\">\n      <failure message=\""
                     "throughput dropped"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"hpcai500.regress.tiny-plain\" "
                     "name=\"throughput\">\n    </testcase>"),
            std::string::npos)
      << xml;
  const std::string summary = ReadFile(cluster_.dir() + "/summary.md");
  EXPECT_NE(summary.find("| tiny-slow | throughput |"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("**REGRESSED**"), std::string::npos) << summary;

  // The promotion is audited like hold and release.
  CommandResult audit = cluster_.Cli({"audit", "--json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_NE(audit.out.find("\"promote\""), std::string::npos) << audit.out;
}

}  // namespace
}  // namespace hpcai500::testing
