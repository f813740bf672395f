// The web pages in a real browser: headless Chromium loads the pages that
// hpcai500d serves, runs their scripts against the JSON API, and the tests
// read the resulting DOM.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kChromium[] = "/usr/bin/chromium";

bool HaveChromium() { return access(kChromium, X_OK) == 0; }

// The page's DOM after its scripts ran, or "" when Chromium failed.
std::string RenderedDom(const TestCluster& cluster, const std::string& path) {
  CommandResult r = RunCommand(
      {kChromium, "--headless", "--no-sandbox", "--disable-gpu",
       "--disable-quic", "--no-first-run", "--disable-background-networking",
       "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + cluster.dir() + "/chromium",
       "--virtual-time-budget=5000", "--dump-dom",
       "http://127.0.0.1:" + std::to_string(cluster.http_port()) + path},
      seconds(90));
  return r.exit_code == 0 ? r.out : "";
}

// The part of `dom` from the first `start` to the next `end` after it, or "".
std::string Between(const std::string& dom, const std::string& start,
                    const std::string& end) {
  size_t from = dom.find(start);
  if (from == std::string::npos) return "";
  size_t to = dom.find(end, from);
  return dom.substr(from, to == std::string::npos ? to : to - from);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

TEST(LeaderboardPage, ShowsARunOnlyAfterItFinishedAndMarksItUnranked) {
  if (!HaveChromium()) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/install-deps.sh "
                 << "installs the chromium package)";
  }
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-a", 2));

  std::string empty = RenderedDom(cluster, "/");
  ASSERT_NE(empty.find("hpcai500 leaderboard"), std::string::npos) << empty;
  EXPECT_EQ(empty.find("browser-smoke"), std::string::npos);

  // One epoch of the smoke config: a shortened budget, so unranked.
  std::string spec = cluster.WriteSpec(
      "short",
      "name: browser-smoke\nworkload: image_classification\n"
      "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
      "ranks_per_node: 2\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
      "seed: 3\nsystem: browser-cpu\nepochs: 1\n");
  CommandResult submit = cluster.Cli({"submit", spec, "--wait"}, seconds(300));
  ASSERT_LE(submit.exit_code, 1) << submit.out << submit.err;

  std::string page = RenderedDom(cluster, "/?workload=image_classification");
  EXPECT_NE(page.find("browser-smoke"), std::string::npos) << page;
  EXPECT_NE(page.find("browser-cpu"), std::string::npos);
  EXPECT_NE(page.find("unranked"), std::string::npos);
  EXPECT_NE(page.find("FLOPS"), std::string::npos);
  EXPECT_NE(page.find("href=\"#/submissions/"), std::string::npos)
      << "each row links to its submission's page";
  if (HasFailure()) cluster.KeepFiles();
}

// One finished smoke run (the config's full two-epoch budget) shared by the
// tests of the runs, run and nodes pages.
class RunPages : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveChromium()) return;
    cluster_ = new TestCluster();
    if (!cluster_->StartCoordinator() || !cluster_->StartAgent("node-a", 2)) {
      return;
    }
    std::string spec = cluster_->WriteSpec(
        "smoke",
        "name: browser-run\nworkload: image_classification\n"
        "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
        "ranks_per_node: 2\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
        "seed: 1\nsystem: browser-cpu\n");
    submit_ = cluster_->Cli({"submit", spec, "--wait"}, seconds(300));
    if (submit_.exit_code == 0 || submit_.exit_code == 1) {
      run_id_ = submit_.out.substr(0, submit_.out.find('\n'));
    }
  }

  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override {
    if (!HaveChromium()) {
      GTEST_SKIP() << kChromium << " is not installed (scripts/install-deps.sh "
                   << "installs the chromium package)";
    }
    ASSERT_NE(cluster_, nullptr);
    ASSERT_FALSE(run_id_.empty())
        << "the smoke run did not finish: " << submit_.out << submit_.err;
  }

  void TearDown() override {
    if (HasFailure() && cluster_ != nullptr) cluster_->KeepFiles();
  }

  static TestCluster* cluster_;
  static CommandResult submit_;
  static std::string run_id_;
};

TestCluster* RunPages::cluster_ = nullptr;
CommandResult RunPages::submit_;
std::string RunPages::run_id_;

TEST_F(RunPages, RunsPageListsTheRunWithItsState) {
  std::string page = RenderedDom(*cluster_, "/#/runs");
  std::string row = Between(page, "data-run-id=\"" + run_id_ + "\"", "</tr>");
  ASSERT_FALSE(row.empty()) << page;
  EXPECT_NE(row.find("browser-run"), std::string::npos) << row;
  EXPECT_NE(row.find("state-succeeded"), std::string::npos) << row;
  EXPECT_NE(row.find("href=\"#/runs/" + run_id_ + "\""), std::string::npos);
  EXPECT_NE(row.find("FLOPS"), std::string::npos) << "scored: Valid FLOPS";
}

TEST_F(RunPages, RunPageDrawsOnePointPerEpochAndTheTarget) {
  int status = 0;
  std::string json = cluster_->HttpGet("/api/v1/runs/" + run_id_, &status);
  ASSERT_EQ(status, 200) << json;
  const int epochs = Count(json, "\"train_loss\":");
  ASSERT_GT(epochs, 1) << json;

  std::string page = RenderedDom(*cluster_, "/#/runs/" + run_id_);
  EXPECT_NE(page.find("browser-run"), std::string::npos) << page;
  EXPECT_NE(page.find("Valid FLOPS"), std::string::npos);
  for (const char* chart :
       {"chart-throughput", "chart-train-loss", "chart-accuracy"}) {
    std::string figure =
        Between(page, "id=\"" + std::string(chart) + "\"", "</figure>");
    ASSERT_FALSE(figure.empty()) << chart << " missing:\n" << page;
    EXPECT_EQ(Count(figure, "<circle"), epochs) << chart << ": " << figure;
  }
  std::string accuracy = Between(page, "id=\"chart-accuracy\"", "</figure>");
  EXPECT_EQ(Count(accuracy, "class=\"target\""), 1) << accuracy;
}

TEST_F(RunPages, NodesPageListsTheConnectedAgent) {
  std::string page = RenderedDom(*cluster_, "/#/nodes");
  std::string row = Between(page, "<td>node-a</td>", "</tr>");
  ASSERT_FALSE(row.empty()) << page;
  EXPECT_NE(row.find(">connected<"), std::string::npos) << row;
  EXPECT_NE(row.find("127.0.0.1"), std::string::npos) << row;
}

TEST_F(RunPages, UnknownRunShowsTheApiError) {
  int status = 0;
  std::string json = cluster_->HttpGet("/api/v1/runs/999999", &status);
  ASSERT_EQ(status, 404) << json;
  const std::string prefix = "\"error\":\"";
  size_t at = json.find(prefix);
  ASSERT_NE(at, std::string::npos) << json;
  at += prefix.size();
  const std::string message = json.substr(at, json.find('"', at) - at);

  std::string page = RenderedDom(*cluster_, "/#/runs/999999");
  std::string shown = Between(page, "id=\"status\"", "</p>");
  EXPECT_NE(shown.find("Cannot load run 999999: " + message), std::string::npos)
      << page;
  EXPECT_EQ(page.find("chart-"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500::testing
