// End-to-end tests with real processes on loopback: hpcai500d, agents,
// workers that train, and the CLI.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

std::string Spec(const std::string& name, const std::string& config, int nodes,
                 int ranks_per_node, const std::string& extra = "") {
  return "name: " + name +
         "\nworkload: image_classification\nconfig: " + config +
         "\nlevel: system\nnodes: " + std::to_string(nodes) +
         "\nranks_per_node: " + std::to_string(ranks_per_node) +
         "\ndevice: cpu\nbatch_size: 64\nprecision: fp32\nseed: 7\n"
         "system: loopback-cpu\n" +
         extra;
}

class EndToEnd : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }

  // `hpcai500 show RUN --json`, parsed; null on failure.
  Json Show(const std::string& run_id) {
    CommandResult r = cluster_.Cli({"show", run_id, "--json"});
    if (r.exit_code != 0) return Json();
    return Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }

  std::string State(const std::string& run_id) {
    Json run = Show(run_id);
    return run.is_object() ? run.value("state", "") : "";
  }

  // The first line of a `submit` output: the run id.
  static std::string FirstLine(const std::string& out) {
    return out.substr(0, out.find('\n'));
  }

  std::string AttemptDir(const std::string& agent, const std::string& run_id) {
    return cluster_.agent_workdir(agent) + "/runs/" + run_id + "/attempt-1";
  }

  // The worker pid recorded by the agent for a rank, or 0.
  pid_t WorkerPid(const std::string& agent, const std::string& run_id,
                  int rank) {
    std::string text = ReadFile(AttemptDir(agent, run_id) + "/rank-" +
                                std::to_string(rank) + ".pid");
    return text.empty() ? 0 : static_cast<pid_t>(std::atol(text.c_str()));
  }

  TestCluster cluster_;
};

TEST_F(EndToEnd, TwoRankRunAcrossTwoAgentsIsScoredRankedAndSurvivesRestart) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  ASSERT_TRUE(cluster_.StartAgent("node-b", 1));

  std::string spec = cluster_.WriteSpec(
      "smoke", Spec("two-nodes", "fashion_mnist_smoke", /*nodes=*/2,
                    /*ranks_per_node=*/1));
  CommandResult submit = cluster_.Cli({"submit", spec, "--wait"}, seconds(300));
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  const std::string run_id = FirstLine(submit.out);
  EXPECT_NE(submit.out.find("epoch 1"), std::string::npos) << submit.out;

  Json run = Show(run_id);
  ASSERT_TRUE(run.is_object());
  EXPECT_EQ(run["state"], "RUN_STATE_SUCCEEDED");
  const Json& score = run["score"];
  // proto3 JSON prints int64 fields as strings.
  EXPECT_GT(std::stoll(score["samples"].get<std::string>()), 0);
  EXPECT_GT(score["train_seconds"].get<double>(), 0);
  EXPECT_GT(score["valid_flops"].get<double>(), 0);
  EXPECT_TRUE(score["reached_target"].get<bool>());
  EXPECT_EQ(run["epochs"].size(), run["spec"]["epochs"].get<size_t>());
  // Both nodes took part: one rank each.
  std::string nodes = run["attempts"][0]["nodes"].dump();
  EXPECT_NE(nodes.find("node-a"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("node-b"), std::string::npos) << nodes;
  EXPECT_FALSE(
      ReadFile(AttemptDir("node-b", run_id) + "/rank-1.events").empty());

  CommandResult board = cluster_.Cli({"leaderboard", "--json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  Json rows = Json::parse(board.out)["rows"];
  ASSERT_EQ(rows.size(), 1u) << board.out;
  EXPECT_EQ(rows[0]["rank"], 1);
  EXPECT_EQ(rows[0]["system"], "loopback-cpu");

  int status = 0;
  std::string api = cluster_.HttpGet(
      "/api/v1/leaderboard?workload=image_classification", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(api.find("two-nodes"), std::string::npos) << api;
  std::string page = cluster_.HttpGet("/", &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(page.find("leaderboard"), std::string::npos);
  std::string run_json = cluster_.HttpGet("/api/v1/runs/" + run_id, &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(run_json.find("valid_flops"), std::string::npos);

  // The coordinator restarts; the result and the leaderboard remain.
  cluster_.StopCoordinator(SIGTERM);
  ASSERT_TRUE(cluster_.StartCoordinator());
  Json again = Show(run_id);
  ASSERT_TRUE(again.is_object());
  EXPECT_EQ(again["state"], "RUN_STATE_SUCCEEDED");
  EXPECT_EQ(again["score"]["valid_flops"], score["valid_flops"]);
  CommandResult board_again = cluster_.Cli({"leaderboard", "--json"});
  EXPECT_EQ(Json::parse(board_again.out)["rows"].size(), 1u);
}

TEST_F(EndToEnd, ExtremeWeatherRunsThroughTheServiceAndIsRankedApart) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  // The whole budget of the generated-data config (the worker writes its
  // year files into the config's data folder on first use): ranked.
  std::string spec = cluster_.WriteSpec(
      "ewa",
      "name: ewa-smoke\nworkload: extreme_weather\nconfig: ewa_smoke\n"
      "level: system\nnodes: 1\nranks_per_node: 1\ndevice: cpu\n"
      "batch_size: 4\nprecision: fp32\nseed: 3\nsystem: loopback-cpu\n");
  CommandResult submit = cluster_.Cli({"submit", spec, "--wait"}, seconds(900));
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  EXPECT_NE(submit.out.find("map50"), std::string::npos) << submit.out;
  const std::string run_id = FirstLine(submit.out);

  Json run = Show(run_id);
  ASSERT_TRUE(run.is_object());
  EXPECT_EQ(run["state"], "RUN_STATE_SUCCEEDED");
  EXPECT_EQ(run["spec"]["workload"], "extreme_weather");
  EXPECT_TRUE(run["spec"]["ranked"].get<bool>());
  const Json& score = run["score"];
  EXPECT_TRUE(score["reached_target"].get<bool>());
  EXPECT_GT(score["valid_flops"].get<double>(), 0);
  EXPECT_GT(score["forward_flops_per_sample"].get<double>(), 1e8);
  EXPECT_GE(score["quality"].get<double>(), score["target"].get<double>());

  // Ranked on the extreme_weather board only.
  int status = 0;
  Json ewa = Json::parse(cluster_.HttpGet(
      "/api/v1/leaderboard?workload=extreme_weather", &status));
  EXPECT_EQ(status, 200);
  ASSERT_EQ(ewa["rows"].size(), 1u) << ewa.dump();
  EXPECT_EQ(ewa["rows"][0]["rank"], 1);
  Json ic = Json::parse(cluster_.HttpGet(
      "/api/v1/leaderboard?workload=image_classification", &status));
  EXPECT_TRUE(ic["rows"].empty()) << ic.dump();
}

TEST_F(EndToEnd, CancelLeavesNoWorkerBehind) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-a", 2));
  std::string spec =
      cluster_.WriteSpec("long", Spec("to-cancel", "fashion_mnist", /*nodes=*/1,
                                      /*ranks_per_node=*/2));
  CommandResult submit = cluster_.Cli({"submit", spec});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string run_id = FirstLine(submit.out);

  pid_t rank0 = 0, rank1 = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        rank0 = WorkerPid("node-a", run_id, 0);
        rank1 = WorkerPid("node-a", run_id, 1);
        return rank0 > 0 && rank1 > 0 && ProcessAlive(rank0) &&
               ProcessAlive(rank1);
      },
      seconds(30)));

  CommandResult cancel = cluster_.Cli({"cancel", run_id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_TRUE(
      WaitFor([&] { return !ProcessAlive(rank0) && !ProcessAlive(rank1); },
              seconds(30)));
  EXPECT_TRUE(WaitFor([&] { return State(run_id) == "RUN_STATE_CANCELLED"; },
                      seconds(10)));
  CommandResult watch = cluster_.Cli({"watch", run_id});
  EXPECT_EQ(watch.exit_code, 2) << watch.out;
}

// An empty folder as the node's Fashion-MNIST: the run fails, and the
// worker's error names that folder, so the agent's --data reached it.
TEST_F(EndToEnd, AgentDataFlagDecidesWhereTheWorkerReads) {
  const std::string empty = cluster_.dir() + "/empty-fashion-mnist";
  std::filesystem::create_directories(empty);
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(
      cluster_.StartAgent("node-a", 1, {"--data", "fashion_mnist=" + empty}));
  std::string spec = cluster_.WriteSpec(
      "moved", Spec("moved-data", "fashion_mnist_smoke", 1, 1));
  CommandResult submit = cluster_.Cli({"submit", spec, "--wait"}, seconds(120));
  EXPECT_EQ(submit.exit_code, 2) << submit.out << submit.err;
  const std::string run_id = FirstLine(submit.out);
  EXPECT_EQ(State(run_id), "RUN_STATE_FAILED");
  std::string stderr_text =
      ReadFile(AttemptDir("node-a", run_id) + "/rank-0.stderr");
  EXPECT_NE(stderr_text.find(empty + "/"), std::string::npos) << stderr_text;
}

TEST_F(EndToEnd, RefusedSpecIsNamedAndStoresNothing) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  CommandResult before = cluster_.Cli({"list"});
  ASSERT_EQ(before.exit_code, 0);
  std::string spec = cluster_.WriteSpec(
      "bad", Spec("bad", "fashion_mnist_smoke", 1, 1, "colour: blue\n"));
  CommandResult submit = cluster_.Cli({"submit", spec, "--wait"});
  EXPECT_EQ(submit.exit_code, 3);
  EXPECT_NE((submit.out + submit.err).find("field 'colour': unknown key"),
            std::string::npos)
      << submit.out << submit.err;
  std::string unknown =
      cluster_.WriteSpec("unknown", Spec("bad", "no_such_config", 1, 1));
  submit = cluster_.Cli({"submit", unknown});
  EXPECT_EQ(submit.exit_code, 3);
  EXPECT_NE(submit.err.find("field 'config'"), std::string::npos) << submit.err;
  CommandResult after = cluster_.Cli({"list"});
  EXPECT_EQ(after.out, before.out);
}

// Stored seqs of one rank of a run's first attempt, read from the SQLite file.
std::vector<int64_t> StoredSeqs(const std::string& db_path,
                                const std::string& run_id, int rank) {
  std::vector<int64_t> seqs;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return seqs;
  }
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT seq FROM events WHERE run_id = ? AND attempt = 1 "
                     "AND rank = ? ORDER BY seq",
                     -1, &stmt, nullptr);
  sqlite3_bind_int64(stmt, 1, std::atoll(run_id.c_str()));
  sqlite3_bind_int(stmt, 2, rank);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    seqs.push_back(sqlite3_column_int64(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return seqs;
}

size_t LineCount(const std::string& path) {
  std::string text = ReadFile(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(EndToEnd, AgentRestartedMidRunReattachesAndLosesNoEvent) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-a", 2));
  std::string spec = cluster_.WriteSpec(
      "smoke", Spec("reattach", "fashion_mnist_smoke", 1, 2));
  CommandResult submit = cluster_.Cli({"submit", spec});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const std::string run_id = FirstLine(submit.out);

  // Wait until training is under way (events flowing), then kill the agent.
  ASSERT_TRUE(WaitFor(
      [&] { return StoredSeqs(cluster_.db_path(), run_id, 0).size() >= 5; },
      seconds(60)));
  pid_t rank0 = WorkerPid("node-a", run_id, 0);
  ASSERT_GT(rank0, 0);
  cluster_.StopAgent("node-a", SIGKILL);
  std::this_thread::sleep_for(seconds(2));
  EXPECT_TRUE(ProcessAlive(rank0)) << "the worker must outlive its agent";

  ASSERT_TRUE(cluster_.StartAgent("node-a", 2));
  CommandResult watch = cluster_.Cli({"watch", run_id}, seconds(300));
  EXPECT_LE(watch.exit_code, 1) << watch.out << watch.err;
  EXPECT_EQ(State(run_id), "RUN_STATE_SUCCEEDED");

  for (int rank = 0; rank < 2; ++rank) {
    std::vector<int64_t> seqs = StoredSeqs(cluster_.db_path(), run_id, rank);
    size_t lines = LineCount(AttemptDir("node-a", run_id) + "/rank-" +
                             std::to_string(rank) + ".events");
    ASSERT_GT(lines, 0u);
    EXPECT_EQ(seqs.size(), lines) << "rank " << rank;
    for (size_t i = 0; i < seqs.size(); ++i) {
      ASSERT_EQ(seqs[i], static_cast<int64_t>(i + 1)) << "rank " << rank;
    }
  }
}

// The nightly CI check: the first run starts the series, the next is judged
// against it, and a fixed reference it cannot meet fails it with a JUnit
// failure for that metric.
TEST_F(EndToEnd, RegressStartsASeriesThenJudgesAgainstIt) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  std::string spec = cluster_.WriteSpec(
      "nightly", Spec("nightly", "fashion_mnist_smoke", /*nodes=*/1,
                      /*ranks_per_node=*/1));

  CommandResult first = cluster_.Cli({"regress", spec}, seconds(300));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string first_id = FirstLine(first.out);
  EXPECT_NE(first.out.find("epoch 1"), std::string::npos) << first.out;
  EXPECT_NE(
      first.out.find("no baseline: run " + first_id + " starts the series"),
      std::string::npos)
      << first.out;

  CommandResult second = cluster_.Cli(
      {"regress", spec, "--tolerance", "90", "--json"}, seconds(300));
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  Json report = Json::parse(second.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(report.is_object()) << second.out;
  EXPECT_EQ(report["baseline"]["run_ids"], Json::array({std::stoll(first_id)}));
  EXPECT_EQ(report["regressed"], false);
  ASSERT_EQ(report["metrics"].size(), 4u) << second.out;
  for (const Json& metric : report["metrics"]) {
    // Time to target has no baseline when the first run missed the target.
    if (metric["metric"] == "time_to_target" && metric["baseline"].is_null()) {
      continue;
    }
    EXPECT_EQ(metric["from"], "runs") << metric.dump();
    EXPECT_GT(metric["baseline"].get<double>(), 0) << metric.dump();
  }

  const std::string junit = cluster_.dir() + "/regress.xml";
  CommandResult third =
      cluster_.Cli({"regress", spec, "--tolerance", "90", "--reference",
                    "throughput=1e12", "--junit", junit},
                   seconds(300));
  EXPECT_EQ(third.exit_code, 1) << third.out << third.err;
  EXPECT_NE(third.out.find("REGRESSED throughput"), std::string::npos)
      << third.out;
  std::string xml = ReadFile(junit);
  EXPECT_NE(xml.find("<testcase classname=\"hpcai500.regress.nightly\" "
                     "name=\"throughput\">\n      <failure "),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos) << xml;
}

}  // namespace
}  // namespace hpcai500::testing
