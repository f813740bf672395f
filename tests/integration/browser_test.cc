// The leaderboard page in a real browser: headless Chromium loads the page
// that hpcai500d serves, runs its script against the JSON API, and the test
// reads the resulting DOM.
#include <gtest/gtest.h>

#include <chrono>
#include <unistd.h>

#include <cstdlib>

#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kChromium[] = "/usr/bin/chromium";

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

TEST(LeaderboardPage, ShowsARunOnlyAfterItFinishedAndMarksItUnranked) {
  if (access(kChromium, X_OK) != 0) {
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
  const std::string run_id = submit.out.substr(0, submit.out.find('\n'));

  std::string page = RenderedDom(cluster, "/?workload=image_classification");
  EXPECT_NE(page.find("browser-smoke"), std::string::npos) << page;
  EXPECT_NE(page.find("browser-cpu"), std::string::npos);
  EXPECT_NE(page.find("unranked"), std::string::npos);
  EXPECT_NE(page.find("FLOPS"), std::string::npos);
  EXPECT_NE(page.find("/api/v1/runs/" + run_id), std::string::npos)
      << "each row links to its run's JSON";
  if (HasFailure()) cluster.KeepFiles();
}

}  // namespace
}  // namespace hpcai500::testing
