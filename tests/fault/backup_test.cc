// `hpcai500d backup` beside a running coordinator that is storing a run's
// events: the copy opens, passes SQLite's integrity check, holds every event
// stored before the backup began, and serves as a database again.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// COUNT(*) of events and PRAGMA integrity_check of a database file.
std::pair<int64_t, std::string> EventsAndIntegrity(const std::string& path) {
  sqlite3* db = nullptr;
  std::pair<int64_t, std::string> result{-1, ""};
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
      SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM events", -1, &stmt,
                           nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      result.first = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      result.second =
          reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return result;
}

TEST(Backup, TakenMidRunOpensAndHoldsEveryStoredEvent) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartFakeAgent("node-a"));
  const std::string run_id = cluster.SubmitRun("backed-up", /*seed=*/1);
  ASSERT_FALSE(run_id.empty());
  ASSERT_TRUE(WaitFor(
      [&] { return cluster.CountStoredEvents(run_id).rows > 0; }, seconds(60)));

  const int64_t stored_before = cluster.CountStoredEvents(run_id).rows;
  const std::string copy = cluster.dir() + "/backup.db";
  CommandResult backup = RunCommand({BinaryPath("hpcai500d"), "backup", "--db",
                                     cluster.db_path(), "--out", copy},
                                    seconds(60));
  ASSERT_EQ(backup.exit_code, 0) << backup.err;
  EXPECT_TRUE(std::filesystem::exists(copy + ".token-key") ||
              !std::filesystem::exists(cluster.db_path() + ".token-key"));

  const auto [events, integrity] = EventsAndIntegrity(copy);
  EXPECT_EQ(integrity, "ok");
  EXPECT_GE(events, stored_before);
  // It serves as a database: hpcai500d opens (and would migrate) it.
  CommandResult opened = RunCommand(
      {BinaryPath("hpcai500d"), "token", "list", "--db", copy}, seconds(60));
  EXPECT_EQ(opened.exit_code, 0) << opened.err;
  // A second backup onto the same file is refused, the copy untouched.
  CommandResult again = RunCommand({BinaryPath("hpcai500d"), "backup", "--db",
                                    cluster.db_path(), "--out", copy},
                                   seconds(60));
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("exists"), std::string::npos) << again.err;

  PrintFaultSummary("hpcai500d backup while a run stores events",
                    "copy passed integrity_check (" + integrity + ") with " +
                        std::to_string(events) + " events, " +
                        std::to_string(stored_before) +
                        " stored before it began",
                    std::max<int64_t>(0, stored_before - events), 0);
}

}  // namespace
}  // namespace hpcai500::testing
