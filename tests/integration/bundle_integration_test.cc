// Result bundles with real processes on loopback (docs/design.md "Result
// bundles"): hpcai500d with a site key, one agent running the noop
// workload, and the CLI exporting, verifying and replaying the run.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr char kNoop[] =
    "name: noop\nworkload: noop\nconfig: noop\nlevel: system\nnodes: 1\n"
    "ranks_per_node: 1\ndevice: cpu\nbatch_size: 1\nprecision: fp32\n"
    "seed: 3\nsystem: loopback-cpu\n";

class BundleIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartCoordinator());
    ASSERT_TRUE(cluster_.StartAgent("node-a", 1));
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }

  CommandResult SiteKey(const std::string& verb) {
    return RunCommand(
        {BinaryPath("hpcai500d"), "site-key", verb, "--db", cluster_.db_path()},
        seconds(30));
  }

  // Submits the noop spec, waits, and returns the run id ("" on failure).
  std::string RunNoop() {
    CommandResult run = cluster_.Cli(
        {"submit", cluster_.WriteSpec("noop", kNoop), "--wait"}, seconds(120));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    return run.out.substr(0, run.out.find('\n'));
  }

  TestCluster cluster_;
};

TEST_F(BundleIntegrationTest, ExportVerifyAndReplayANoopRun) {
  const std::string id = RunNoop();
  ASSERT_FALSE(id.empty());
  const std::string file = cluster_.dir() + "/run.bundle";

  CommandResult no_key = cluster_.Cli({"export", id, "--out", file});
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_NE(no_key.err.find("hpcai500d site-key create"), std::string::npos)
      << no_key.err;

  CommandResult created = SiteKey("create");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string key = created.out.substr(0, created.out.find('\n'));
  ASSERT_EQ(key.size(), 64u) << created.out;
  EXPECT_EQ(SiteKey("show").out, created.out);
  EXPECT_NE(SiteKey("create").exit_code, 0) << "a site key is made once";

  CommandResult exported = cluster_.Cli({"export", id, "--out", file});
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  EXPECT_NE(exported.out.find(key), std::string::npos) << exported.out;

  CommandResult verified = cluster_.Cli({"verify", file});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;
  for (const std::string& check : std::vector<std::string>{
           "archive", "signature", "digests", "mllog run " + id,
           "score run " + id, "convergence"}) {
    EXPECT_NE(verified.out.find("ok    " + check), std::string::npos)
        << check << "\n"
        << verified.out;
  }
  EXPECT_NE(verified.out.find("verified: run " + id + " signed by site " + key),
            std::string::npos)
      << verified.out;
  CommandResult as_json = cluster_.Cli({"verify", file, "--json"});
  EXPECT_EQ(as_json.exit_code, 0);
  const Json report = Json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << as_json.out;
  EXPECT_TRUE(report.value("ok", false));
  EXPECT_EQ(report.value("site_key", ""), key);

  // The run's submission, exported as one: the same run, its own subject.
  CommandResult shown = cluster_.Cli({"show", id, "--json"});
  const Json run = Json::parse(shown.out, nullptr, false);
  ASSERT_TRUE(run.is_object()) << shown.out;
  const std::string submission = run.value("submission_id", "");
  ASSERT_FALSE(submission.empty()) << shown.out;
  const std::string whole = cluster_.dir() + "/submission.bundle";
  CommandResult of_submission =
      cluster_.Cli({"export", submission, "--submission", "--out", whole});
  ASSERT_EQ(of_submission.exit_code, 0) << of_submission.err;
  CommandResult submission_verified = cluster_.Cli({"verify", whole});
  EXPECT_EQ(submission_verified.exit_code, 0) << submission_verified.out;
  EXPECT_NE(submission_verified.out.find("verified: submission " + submission),
            std::string::npos)
      << submission_verified.out;

  // One byte changed in the file: refused, naming the archive.
  std::string bytes = ReadFile(file);
  ASSERT_GT(bytes.size(), 100u);
  bytes[bytes.size() / 2] ^= 0x55;
  const std::string broken = cluster_.dir() + "/broken.bundle";
  std::ofstream(broken, std::ios::binary) << bytes;
  CommandResult refused = cluster_.Cli({"verify", broken});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("FAIL  archive"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("not verified: archive"), std::string::npos);

  CommandResult replayed = cluster_.Cli({"replay", file}, seconds(120));
  EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  EXPECT_NE(replayed.out.find("bundle run " + id), std::string::npos)
      << replayed.out;
  EXPECT_NE(replayed.out.find("Valid FLOPS"), std::string::npos);
  EXPECT_NE(replayed.out.find("ratio"), std::string::npos);
}

TEST_F(BundleIntegrationTest, ExportOfARunWithoutAResultIsRefused) {
  ASSERT_EQ(SiteKey("create").exit_code, 0);
  CommandResult missing =
      cluster_.Cli({"export", "999", "--out", cluster_.dir() + "/x.bundle"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("999"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::ifstream(cluster_.dir() + "/x.bundle").good());
}

}  // namespace
}  // namespace hpcai500::testing
