// The database's disk fills up while a run trains, then space comes back.
// The database lives on a small tmpfs (mounted here: the test needs root, or
// a user namespace that allows it, and says why it skips otherwise); a file
// fills what is left of it. Meanwhile submits answer "unavailable" (exit
// 75, nothing stored), /healthz and /metrics say the store fails, the run's
// events wait at its agent and are sent again on the live stream, and the
// run gets no verdict; once the file is removed, the run ends as it would
// have, every event stored once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client/exit_codes.h"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// Writes zeros to `path` until the file system is full; returns the bytes
// written.
int64_t FillUp(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  const std::vector<char> chunk(64 * 1024, 0);
  int64_t written = 0;
  while (out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()))) {
    written += static_cast<int64_t>(chunk.size());
  }
  // What a partial chunk left: out of space now, whatever the page size.
  out.clear();
  for (int i = 0; i < 4096 && out.write(chunk.data(), 1); ++i) ++written;
  return written;
}

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = cluster_.dir() + "/dbfs";
    std::filesystem::create_directories(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=8m") != 0) {
      const std::string why = std::strerror(errno);
      mount_.clear();
      GTEST_SKIP() << "mounting a tmpfs is not allowed here (" << why
                   << "): run the fault tests as root to test a full disk";
    }
    // The harness's database path, pointing into the small file system:
    // SQLite follows the link, its WAL lies beside the real file.
    std::filesystem::create_symlink(mount_ + "/hpcai500.db",
                                    cluster_.db_path());
  }
  void TearDown() override {
    cluster_.StopAgent("node-a", SIGTERM);
    cluster_.StopCoordinator(SIGTERM);
    if (!mount_.empty()) ::umount2(mount_.c_str(), MNT_DETACH);
  }

  std::string State(const std::string& run_id) {
    nlohmann::json run = cluster_.ShowRun(run_id);
    return run.is_null() ? "" : run.value("state", "");
  }

  FaultCluster cluster_;
  std::string mount_;
};

TEST_F(DiskFull, RunWaitsForSpaceThenEndsWithEveryEventStoredOnce) {
  ASSERT_TRUE(cluster_.StartCoordinator());
  // Stored before the disk fills; placed once an agent comes.
  const std::string run_id = cluster_.SubmitSmokeRun("disk-full");
  ASSERT_FALSE(run_id.empty());
  const std::string filler = mount_ + "/filler";
  ASSERT_GT(FillUp(filler), 0);

  // A submit stores nothing and says to retry: not a refused spec.
  // The same spec under another name.
  CommandResult late =
      cluster_.Cli({"submit", cluster_.WriteRunSpec("late", /*seed=*/1)});
  EXPECT_EQ(late.exit_code, kExitUnavailable) << late.out << late.err;
  EXPECT_NE(late.err.find("cannot store now"), std::string::npos) << late.err;
  EXPECT_NE(late.err.find("full"), std::string::npos) << late.err;
  int status = 0;
  const std::string health = cluster_.HttpGet("/healthz", &status);
  EXPECT_EQ(status, 503) << health;
  EXPECT_NE(health.find("store failing since"), std::string::npos) << health;
  EXPECT_EQ(cluster_.HttpGet("/livez", &status), "ok\n");
  EXPECT_EQ(status, 200);

  // The run trains while nothing of it can be stored.
  ASSERT_TRUE(cluster_.StartAgent("node-a", /*slots=*/1));
  pid_t worker = 0;
  ASSERT_TRUE(WaitFor(
      [&] { return (worker = cluster_.WorkerPid("node-a", run_id, 1, 0)) > 0; },
      seconds(120)));
  ASSERT_TRUE(WaitFor([&] { return kill(worker, 0) != 0; }, seconds(180)))
      << "the worker did not end";
  // Past the coordinator's grace for a run whose ranks all exited (10 s):
  // no verdict on a run whose events are not stored.
  std::this_thread::sleep_for(seconds(15));
  const std::string waiting = State(run_id);
  EXPECT_TRUE(waiting == "RUN_STATE_RUNNING" || waiting == "RUN_STATE_STARTING")
      << waiting;
  const std::string metrics = cluster_.HttpGet("/metrics", &status);
  EXPECT_NE(metrics.find("hpcai500_store_failing 1"), std::string::npos)
      << metrics;

  // Space again: the agent's next resend is stored, the run is scored.
  std::filesystem::remove(filler);
  const std::string state = cluster_.WaitForEnd(run_id, seconds(180));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED") << cluster_.ShowRun(run_id).dump();
  EXPECT_EQ(cluster_.HttpGet("/healthz", &status), "ok\n");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(cluster_.CountResults(run_id), 1);
  const StoredEventCounts stored = cluster_.CountStoredEvents(run_id, 1);
  EXPECT_GT(stored.distinct, 0);
  ExpectNoneLostOrStoredTwice(
      "database disk full while run " + run_id + " trained",
      "submit exited " + std::to_string(late.exit_code) + ", the run waited " +
          waiting + ", then " + state + " once space was back (" +
          std::to_string(stored.distinct) + " events)",
      cluster_.LostEvents("node-a", run_id, 1, 0, /*acked_only=*/false),
      stored.stored_twice());
}

}  // namespace
}  // namespace hpcai500::testing
