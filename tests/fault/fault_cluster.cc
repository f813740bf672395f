#include "tests/fault/fault_cluster.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "nlohmann/json.hpp"

namespace hpcai500::testing {

namespace {

using std::chrono::seconds;

// The worker's test-only slowdown (worker/test_slowdown.h): 300 makes each
// step take four times as long.
constexpr char kSlowVar[] = "HPCAI500_TEST_SLOW_STEP_PCT";
constexpr char kSlowWhileVar[] = "HPCAI500_TEST_SLOW_WHILE_FILE";

std::string SpecYaml(const std::string& name, int seed, int nodes) {
  return "name: " + name +
         "\nworkload: image_classification\n"
         "config: fashion_mnist_smoke\nlevel: system\nnodes: " +
         std::to_string(nodes) +
         "\nranks_per_node: 1\ndevice: cpu\nbatch_size: 64\n"
         "precision: fp32\nseed: " +
         std::to_string(seed) + "\nsystem: loopback-cpu\n";
}

// Runs `sql` (one row of integers; `params` bound to ?1, ?2, ..., as
// integers where they are numbers) on the
// database file read-only; zeros when it cannot.
std::vector<int64_t> QueryRow(const std::string& db_path, const char* sql,
                              const std::vector<std::string>& params,
                              int columns) {
  std::vector<int64_t> row(columns, 0);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return row;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    for (size_t i = 0; i < params.size(); ++i) {
      // Numbers bind as integers: SQLite never finds the text '0' = 0.
      char* end = nullptr;
      const long long number = std::strtoll(params[i].c_str(), &end, 10);
      if (!params[i].empty() && *end == '\0') {
        sqlite3_bind_int64(stmt, static_cast<int>(i + 1), number);
      } else {
        sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i].c_str(), -1,
                          SQLITE_TRANSIENT);
      }
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      for (int c = 0; c < columns; ++c) row[c] = sqlite3_column_int64(stmt, c);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return row;
}

}  // namespace

FaultCluster::~FaultCluster() {
  if (::testing::Test::HasFailure()) KeepFiles();
}

bool FaultCluster::StartFakeAgent(const std::string& name) {
  return StartAgent(name, /*slots=*/1, {"--worker", FAULT_TORN_LINE_WORKER});
}

// The agent passes the variable on to its workers only when --env names it,
// and takes its value from its own environment.
bool FaultCluster::StartSlowAgent(const std::string& name, int slow_step_pct,
                                  const std::string& slow_while_file) {
  ::setenv(kSlowVar, std::to_string(slow_step_pct).c_str(), 1);
  std::vector<std::string> args = {"--env", kSlowVar};
  if (!slow_while_file.empty()) {
    ::setenv(kSlowWhileVar, slow_while_file.c_str(), 1);
    args.insert(args.end(), {"--env", kSlowWhileVar});
  }
  const bool started = StartAgent(name, /*slots=*/1, args);
  ::unsetenv(kSlowVar);
  ::unsetenv(kSlowWhileVar);
  return started;
}

void FaultCluster::LaunchSlowAgent(const std::string& name) {
  ::setenv(kSlowVar, "300", 1);
  LaunchAgent(name, /*slots=*/1, {"--env", kSlowVar});
  ::unsetenv(kSlowVar);
}

std::string FaultCluster::WriteRunSpec(const std::string& name, int seed,
                                       int nodes) {
  return WriteSpec(name, SpecYaml(name, seed, nodes));
}

std::string FaultCluster::SubmitRun(const std::string& name, int seed,
                                    int nodes, const std::string& extra_yaml) {
  CommandResult submit = Cli(
      {"submit", WriteSpec(name, SpecYaml(name, seed, nodes) + extra_yaml)});
  if (submit.exit_code != 0) return "";
  return submit.out.substr(0, submit.out.find('\n'));
}

std::string FaultCluster::SubmitSmokeRun(const std::string& name) {
  return SubmitRun(name, /*seed=*/1, /*nodes=*/1);
}

std::string FaultCluster::SubmitSmokeRunAndWaitUntil(
    const std::string& name, const std::string& key,
    const std::function<bool(int64_t)>& enough) {
  const std::string run_id = SubmitSmokeRun(name);
  if (run_id.empty()) {
    ADD_FAILURE() << "the submit of " << name << " failed";
    return "";
  }
  // A smoke epoch takes seconds alone; the tests of real processes share
  // the machine (scripts/test.sh), where one took over 120 s beside a
  // build.
  if (!WaitFor([&] { return enough(CountStoredKey(run_id, 1, key)); },
               seconds(300))) {
    ADD_FAILURE() << "run " << run_id << ": " << key
                  << " not stored as awaited within 300 s";
    return "";
  }
  return run_id;
}

std::string FaultCluster::SubmitSmokeRunAndWaitUntilTraining(
    const std::string& name, pid_t* worker) {
  const std::string run_id = SubmitSmokeRunAndWaitUntil(
      name, "run_start", [](int64_t stored) { return stored == 1; });
  if (worker != nullptr) {
    *worker = run_id.empty() ? 0 : WorkerPid("node-a", run_id, 1, 0);
  }
  return run_id;
}

std::string FaultCluster::SubmitSmokeRunAndWaitUntilCheckpointed(
    const std::string& name) {
  return SubmitSmokeRunAndWaitUntil(name, "hpcai500_checkpoint",
                                    [](int64_t stored) { return stored >= 1; });
}

std::string FaultCluster::StartSlowTraining(
    const std::string& node_timeout_s, const std::string& name, pid_t* worker,
    int slow_step_pct, const std::string& slow_while_file) {
  if (worker != nullptr) *worker = 0;
  if (!StartCoordinator({"--node-timeout-s", node_timeout_s})) {
    ADD_FAILURE() << "hpcai500d did not start";
    return "";
  }
  if (!StartSlowAgent("node-a", slow_step_pct, slow_while_file)) {
    ADD_FAILURE() << "node-a did not register";
    return "";
  }
  return SubmitSmokeRunAndWaitUntilTraining(name, worker);
}

nlohmann::json FaultCluster::ShowRun(const std::string& run_id) {
  CommandResult show = Cli({"show", run_id, "--json"});
  if (show.exit_code != 0) return nullptr;
  return nlohmann::json::parse(show.out, nullptr, /*allow_exceptions=*/false);
}

std::string FaultCluster::WaitForEnd(const std::string& run_id,
                                     std::chrono::seconds timeout) {
  std::string state;
  WaitFor(
      [&] {
        nlohmann::json run = ShowRun(run_id);
        state = run.is_object() ? run.value("state", "") : "";
        return state == "RUN_STATE_SUCCEEDED" || state == "RUN_STATE_FAILED" ||
               state == "RUN_STATE_CANCELLED";
      },
      timeout);
  return state;
}

StoredEventCounts FaultCluster::CountStoredEvents(const std::string& run_id,
                                                  int attempt) {
  const std::vector<int64_t> row = QueryRow(
      db_path(),
      "SELECT COUNT(*), COUNT(DISTINCT attempt || '/' || rank || '/' || seq), "
      "COALESCE(SUM(error != ''), 0), COALESCE(MAX(seq), 0) FROM events "
      "WHERE run_id = ?1 AND (?2 = 0 OR attempt = ?2)",
      {run_id, std::to_string(attempt)}, 4);
  return StoredEventCounts{row[0], row[1], row[2], row[3]};
}

int64_t FaultCluster::CountStoredKey(const std::string& run_id, int attempt,
                                     const std::string& key) {
  return QueryRow(
      db_path(),
      "SELECT COUNT(*) FROM events WHERE run_id = ?1 AND "
      "attempt = ?2 AND line LIKE ?3",
      {run_id, std::to_string(attempt), "%\"key\": \"" + key + "\"%"}, 1)[0];
}

int64_t FaultCluster::CountResults(const std::string& run_id) {
  return QueryRow(db_path(), "SELECT COUNT(*) FROM results WHERE run_id = ?1",
                  {run_id}, 1)[0];
}

int64_t FaultCluster::CountRuns() {
  return QueryRow(db_path(), "SELECT COUNT(*) FROM runs", {}, 1)[0];
}

std::string FaultCluster::AttemptDir(const std::string& name,
                                     const std::string& run_id,
                                     int attempt) const {
  return agent_workdir(name) + "/runs/" + run_id + "/attempt-" +
         std::to_string(attempt);
}

std::string FaultCluster::RankFile(const std::string& name,
                                   const std::string& run_id, int attempt,
                                   int rank, const std::string& suffix) const {
  return AttemptDir(name, run_id, attempt) + "/rank-" + std::to_string(rank) +
         suffix;
}

pid_t FaultCluster::WorkerPid(const std::string& name,
                              const std::string& run_id, int attempt,
                              int rank) const {
  const std::string text =
      ReadFile(RankFile(name, run_id, attempt, rank, ".pid"));
  return text.empty() ? 0 : static_cast<pid_t>(std::atol(text.c_str()));
}

bool FaultCluster::StartWithSharedCheckpoints(
    const std::string& node_timeout_s) {
  if (!StartCoordinator({"--node-timeout-s", node_timeout_s})) return false;
  for (const char* node : {"node-a", "node-b"}) {
    if (!StartAgent(node, 1,
                    {"--checkpoint-root", SharedCheckpointRoot(),
                     "--shared-checkpoints"})) {
      return false;
    }
  }
  return true;
}

bool FaultCluster::WaitUntilAllStored(const std::string& name,
                                      const std::string& run_id, int attempt,
                                      int rank, std::chrono::seconds timeout) {
  return WaitFor(
      [&] {
        return LostEvents(name, run_id, attempt, rank, /*acked_only=*/false) ==
               0;
      },
      timeout);
}

bool FaultCluster::WaitUntilAllAcked(const std::string& name,
                                     const std::string& run_id, int attempt,
                                     int rank, std::chrono::seconds timeout) {
  const std::string done = RankFile(name, run_id, attempt, rank, ".done");
  return WaitFor([&] { return std::filesystem::exists(done); }, timeout);
}

int64_t FaultCluster::LostEvents(const std::string& name,
                                 const std::string& run_id, int attempt,
                                 int rank, bool acked_only) {
  if (acked_only) {
    return MissingUpTo(run_id, attempt, rank,
                       AckedSeq(name, run_id, attempt, rank));
  }
  const std::string text =
      ReadFile(RankFile(name, run_id, attempt, rank, ".events"));
  return MissingUpTo(run_id, attempt, rank,
                     std::count(text.begin(), text.end(), '\n'));
}

int64_t FaultCluster::MissingUpTo(const std::string& run_id, int attempt,
                                  int rank, int64_t seq) {
  const int64_t stored =
      QueryRow(db_path(),
               "SELECT COUNT(DISTINCT seq) FROM events WHERE run_id = ?1 AND "
               "attempt = ?2 AND rank = ?3 AND seq <= ?4",
               {run_id, std::to_string(attempt), std::to_string(rank),
                std::to_string(seq)},
               1)[0];
  return seq - stored;
}

int64_t FaultCluster::AckedSeq(const std::string& name,
                               const std::string& run_id, int attempt,
                               int rank) const {
  return std::atoll(
      ReadFile(RankFile(name, run_id, attempt, rank, ".acked")).c_str());
}

StoredEventCounts FaultCluster::ExpectStoredOnce(
    const std::string& run_id, int64_t events_lost, const std::string& fault,
    const std::string& what_happened) {
  const StoredEventCounts stored = CountStoredEvents(run_id);
  EXPECT_GT(stored.distinct, 20);  // the counts are of real rows
  ExpectNoneLostOrStoredTwice(fault, what_happened, events_lost,
                              stored.stored_twice());
  return stored;
}

StoredEventCounts FaultCluster::ExpectAckedAndStoredOnce(
    const std::string& run_id, const std::string& fault,
    const std::string& what_happened) {
  EXPECT_TRUE(WaitUntilAllAcked("node-a", run_id, 1, 0, seconds(30)));
  return ExpectStoredOnce(
      run_id, LostEvents("node-a", run_id, 1, 0, /*acked_only=*/false), fault,
      what_happened);
}

std::string PrintFaultSummary(const std::string& fault,
                              const std::string& what_happened,
                              int64_t events_lost, int64_t stored_twice) {
  return PrintFaultFigures(fault, what_happened,
                           "events lost " + std::to_string(events_lost) +
                               ", events stored twice " +
                               std::to_string(stored_twice));
}

void ExpectNoneLostOrStoredTwice(const std::string& fault,
                                 const std::string& what_happened,
                                 int64_t events_lost, int64_t stored_twice) {
  PrintFaultSummary(fault, what_happened, events_lost, stored_twice);
  EXPECT_EQ(events_lost, 0) << fault;
  EXPECT_EQ(stored_twice, 0) << fault;
}

std::string PrintFaultFigures(const std::string& fault,
                              const std::string& what_happened,
                              const std::string& figures) {
  const std::string line =
      "FAULT " + fault + ": " + what_happened + "; " + figures;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return line;
}

}  // namespace hpcai500::testing
