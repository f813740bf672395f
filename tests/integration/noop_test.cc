// The noop workload and `hpcai500 check` with real processes on loopback:
// hpcai500d, two agents, real workers (rendezvous over Gloo) and the CLI.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr char kTwoNodeNoop[] =
    "name: noop\nworkload: noop\nconfig: noop\nlevel: system\nnodes: 2\n"
    "ranks_per_node: 1\ndevice: cpu\nbatch_size: 1\nprecision: fp32\n"
    "seed: 0\nsystem: loopback-cpu\n";

class NoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartCoordinator());
    ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
    ASSERT_TRUE(cluster_.StartAgent("node-b", 1));
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }

  TestCluster cluster_;
};

TEST_F(NoopTest, ATwoNodeNoopRunSucceedsWithAScoreOfZerosAndNoRow) {
  CommandResult run = cluster_.Cli(
      {"submit", cluster_.WriteSpec("noop", kTwoNodeNoop), "--wait"},
      seconds(120));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string id = run.out.substr(0, run.out.find('\n'));
  CommandResult shown = cluster_.Cli({"show", id, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const Json json = Json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(json.is_object()) << shown.out;
  EXPECT_EQ(json.value("state", ""), "RUN_STATE_SUCCEEDED") << shown.out;
  const Json& score = json["score"];
  EXPECT_EQ(score.value("valid_flops", -1.0), 0.0) << shown.out;
  EXPECT_EQ(score.value("flops", -1.0), 0.0);
  EXPECT_EQ(score.value("quality", -1.0), 0.0);
  EXPECT_TRUE(score.value("reached_target", false));
  ASSERT_EQ(json["epochs"].size(), 1u) << "one epoch: rendezvous + all-reduce";
  EXPECT_EQ(json["epochs"][0].value("samples", "x"), "0");
  EXPECT_EQ(shown.out.find("NaN"), std::string::npos) << shown.out;
  EXPECT_EQ(json["spec"].value("ranked", true), false);
  // Both nodes took part, and each attempt's provenance names the worker
  // and the LibTorch it ran (from `hpcai500-worker --version`).
  const Json& attempt = json["attempts"][0];
  ASSERT_EQ(attempt["nodes"].size(), 2u) << shown.out;
  for (const char* node : {"node-a", "node-b"}) {
    const Json& versions = attempt["inventory"][node]["versions"];
    EXPECT_NE(versions.value("worker", "").find("(git "), std::string::npos)
        << node << ": " << versions.dump();
    // "2.11.0 (CUDA, NCCL 2.28.9)" from PyPI's torch; "(CPU)" elsewhere.
    EXPECT_TRUE(std::regex_match(
        versions.value("libtorch", ""),
        std::regex(R"([0-9]+\.[0-9]+\.[0-9]+ \((CPU|CUDA, NCCL [0-9.]+)\))")))
        << node << ": " << versions.dump();
  }
  CommandResult human = cluster_.Cli({"show", id});
  EXPECT_NE(human.out.find("libtorch"), std::string::npos) << human.out;

  CommandResult board = cluster_.Cli({"leaderboard", "--json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  EXPECT_EQ(board.out.find("noop"), std::string::npos)
      << "a noop run is never on the leaderboard: " << board.out;
}

TEST_F(NoopTest, CheckOfAHealthyNodeExitsZeroWithATimePerPhase) {
  CommandResult check = cluster_.Cli({"check", "node-b"}, seconds(120));
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  for (const char* phase : {"check node-b: queued", "check node-b: started",
                            "check node-b: rendezvous/epoch",
                            "check node-b: exited", "check node-b: healthy"}) {
    EXPECT_NE(check.out.find(phase), std::string::npos) << phase << " in:\n"
                                                        << check.out;
  }
  // The run went to node-b and nowhere else.
  CommandResult json =
      cluster_.Cli({"check", "node-a", "--json"}, seconds(120));
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  const Json report = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << json.out;
  EXPECT_TRUE(report.value("healthy", false));
  EXPECT_TRUE(report["phases"]["rendezvous_epoch_s"].is_number()) << json.out;
  CommandResult shown = cluster_.Cli(
      {"show", std::to_string(report.value("run_id", 0)), "--json"});
  const Json run = Json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(run.is_object()) << shown.out;
  EXPECT_EQ(run["attempts"][0]["nodes"], Json::array({"node-a"})) << shown.out;
}

TEST_F(NoopTest, CheckOfAnUnknownOrDrainedNodeExitsTwoSayingWhich) {
  CommandResult unknown = cluster_.Cli({"check", "node-z", "--timeout", "20"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out << unknown.err;
  EXPECT_NE(unknown.out.find("UNHEALTHY: unknown node 'node-z' (registered: "
                             "node-a, node-b)"),
            std::string::npos)
      << unknown.out;

  CommandResult drained =
      cluster_.Cli({"drain", "node-a", "--reason", "fan replaced"});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  CommandResult check = cluster_.Cli({"check", "node-a", "--json"});
  EXPECT_EQ(check.exit_code, 2) << check.out << check.err;
  const Json report = Json::parse(check.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << check.out;
  EXPECT_FALSE(report.value("healthy", true));
  EXPECT_NE(report.value("problem", "").find("fan replaced"), std::string::npos)
      << check.out;
  EXPECT_EQ(report.value("run_id", -1), 0) << "no run submitted";
}

}  // namespace
}  // namespace hpcai500::testing
