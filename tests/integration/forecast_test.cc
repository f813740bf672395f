// Early abort with real processes: a tiny fashion_mnist_curve run whose
// batch (640 of 1,280 images: two steps an epoch at a learning rate of 2)
// cannot learn is forecast hopeless after min_epochs, aborted, and shows
// the forecast that ended it and the node-hours it gave back.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr char kHopelessSpec[] =
    "name: hopeless\nworkload: image_classification\n"
    "config: fashion_mnist_curve\nlevel: system\nnodes: 1\n"
    "ranks_per_node: 1\ndevice: cpu\nbatch_size: 640\nprecision: fp32\n"
    "seed: 7\nsystem: loopback-cpu\nabort_if_hopeless: 0.2\nmin_epochs: 3\n";

TEST(EarlyAbort, HopelessTinyRunIsAbortedWithItsForecast) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-a", 1));
  const std::string spec = cluster.WriteSpec("hopeless", kHopelessSpec);
  CommandResult submit = cluster.Cli({"submit", spec, "--wait"}, seconds(240));
  const std::string run_id = submit.out.substr(0, submit.out.find('\n'));
  // An aborted run is not a result: exit 2, like failed or cancelled.
  EXPECT_EQ(submit.exit_code, 2) << submit.out << submit.err;
  EXPECT_NE(submit.out.find("aborted: hopeless after epoch"), std::string::npos)
      << submit.out;

  CommandResult shown = cluster.Cli({"show", run_id, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const Json run = Json::parse(shown.out);
  EXPECT_EQ(run["state"], "RUN_STATE_ABORTED");
  EXPECT_FALSE(run.contains("score"));
  const Json& forecast = run["forecast"];
  ASSERT_TRUE(forecast.is_object()) << shown.out;
  EXPECT_GE(forecast["epoch"].get<int>(), 3);  // not before min_epochs
  EXPECT_LT(forecast["epoch"].get<int>(), 8);  // and before its budget
  EXPECT_LT(forecast.value("probability", 0.0), 0.2);
  EXPECT_GT(forecast["node_hours_saved"].get<double>(), 0);
  EXPECT_LT(run["epochs"].size(), 8u);  // it stopped training

  CommandResult text = cluster.Cli({"show", run_id});
  EXPECT_NE(text.out.find("unlikely to reach 0.75"), std::string::npos)
      << text.out;
  CommandResult history = cluster.Cli({"history", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  const Json rows = Json::parse(history.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["state"], "aborted");
  EXPECT_GT(rows[0]["node_hours_saved"].get<double>(), 0);
  int status = 0;
  const std::string api = cluster.HttpGet("/api/v1/runs/" + run_id, &status);
  EXPECT_EQ(status, 200);
  EXPECT_NE(api.find("\"node_hours_saved\""), std::string::npos) << api;

  // Its worker was stopped as a cancel stops it.
  const std::string pid_file = cluster.agent_workdir("node-a") + "/runs/" +
                               run_id + "/attempt-1/rank-0.pid";
  const pid_t pid = static_cast<pid_t>(std::atol(ReadFile(pid_file).c_str()));
  ASSERT_GT(pid, 0) << pid_file;
  EXPECT_TRUE(WaitFor([pid] { return kill(pid, 0) != 0; }, seconds(60)))
      << "worker " << pid << " still runs";
  if (::testing::Test::HasFailure()) cluster.KeepFiles();
}

}  // namespace
}  // namespace hpcai500::testing
