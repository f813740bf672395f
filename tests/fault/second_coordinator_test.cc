// One coordinator per database and per port: a second hpcai500d exits with
// a message naming what the first holds, and the first keeps serving; also
// when the second is given another path to the same file (a symlink, a hard
// link), which names another lock file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// The last non-empty line of `text`: hpcai500d's own error, after any lines
// gRPC logged before it.
std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(text.rfind('\n') + 1);
}

class SecondCoordinator : public ::testing::Test {
 protected:
  // Runs another hpcai500d to completion on `grpc_port` and `db`.
  CommandResult RunSecond(int grpc_port, const std::string& db) {
    return RunCommand({BinaryPath("hpcai500d"), "--grpc",
                       "127.0.0.1:" + std::to_string(grpc_port), "--http",
                       "127.0.0.1:" + std::to_string(FreePort()), "--db", db,
                       "--web-dir", std::string(HPCAI500_SOURCE_DIR) + "/web"},
                      seconds(30));
  }

  // A whole-line run on the first coordinator: every event stored once.
  void ExpectFirstStillServesARun(const std::string& fault,
                                  const CommandResult& second) {
    ASSERT_TRUE(cluster_.StartFakeAgent("node-a"));
    const std::string run_id = cluster_.SubmitRun("after-second", /*seed=*/1);
    ASSERT_FALSE(run_id.empty());
    const std::string state = cluster_.WaitForEnd(run_id, seconds(120));
    EXPECT_NE(state, "");
    EXPECT_NE(state, "RUN_STATE_RUNNING");
    StoredEventCounts stored = cluster_.CountStoredEvents(run_id);
    EXPECT_EQ(stored.distinct, FaultCluster::kWorkerEvents);
    EXPECT_EQ(stored.errors, 0);
    ExpectNoneLostOrStoredTwice(
        fault,
        "second exited " + std::to_string(second.exit_code) + " (" +
            LastLine(second.err) + "); the first served a run to " + state,
        FaultCluster::kWorkerEvents - (stored.distinct - stored.errors),
        stored.stored_twice());
  }

  // A second hpcai500d on `link`, another path to the live database, exits
  // saying so, and the first keeps serving.
  void ExpectRefusedOnAnotherPath(const std::string& link,
                                  const std::string& what) {
    CommandResult second = RunSecond(FreePort(), link);
    EXPECT_NE(second.exit_code, 0);
    EXPECT_NE(
        second.err.find("is in use by another hpcai500d, which opened the "
                        "same file under another path"),
        std::string::npos)
        << second.err;
    ExpectFirstStillServesARun("second hpcai500d on " + what, second);
  }

  FaultCluster cluster_;
};

TEST_F(SecondCoordinator, OnTheSameDatabaseExitsNamingTheLockFile) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  CommandResult second = RunSecond(FreePort(), cluster_.db_path());
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find(cluster_.db_path() + ".lock"), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("in use by another hpcai500d (pid "),
            std::string::npos)
      << second.err;
  ExpectFirstStillServesARun("second hpcai500d on the same database", second);
}

TEST_F(SecondCoordinator, OnASymlinkToTheDatabaseExits) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  const std::string link = cluster_.dir() + "/symlinked.db";
  std::filesystem::create_symlink(cluster_.db_path(), link);
  ExpectRefusedOnAnotherPath(link, "a symlink to the database");
}

TEST_F(SecondCoordinator, OnAHardLinkToTheDatabaseExits) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  const std::filesystem::path other = cluster_.dir() + "/elsewhere";
  std::filesystem::create_directories(other);
  const std::string link = (other / "hardlinked.db").string();
  std::filesystem::create_hard_link(cluster_.db_path(), link);
  ExpectRefusedOnAnotherPath(link, "a hard link to the database");
}

TEST_F(SecondCoordinator, OnTheSamePortExits) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  const int port = std::stoi(
      cluster_.grpc_address().substr(cluster_.grpc_address().rfind(':') + 1));
  CommandResult second = RunSecond(port, cluster_.dir() + "/other.db");
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("cannot listen"), std::string::npos) << second.err;
  ExpectFirstStillServesARun("second hpcai500d on the same gRPC port", second);
}

}  // namespace
}  // namespace hpcai500::testing
