#include "tests/fault/fault_cluster.h"

#include <sqlite3.h>

#include <cstdio>

#include "nlohmann/json.hpp"

namespace hpcai500::testing {

bool FaultCluster::StartFakeAgent(const std::string& name) {
  return StartAgent(name, /*slots=*/1, {"--worker", FAULT_TORN_LINE_WORKER});
}

std::string FaultCluster::SubmitRun(const std::string& name, int seed) {
  const std::string spec = WriteSpec(
      name, "name: " + name +
                "\nworkload: image_classification\n"
                "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
                "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\n"
                "precision: fp32\nseed: " +
                std::to_string(seed) + "\nsystem: loopback-cpu\n");
  CommandResult submit = Cli({"submit", spec});
  if (submit.exit_code != 0) return "";
  return submit.out.substr(0, submit.out.find('\n'));
}

std::string FaultCluster::WaitForEnd(const std::string& run_id,
                                     std::chrono::seconds timeout) {
  std::string state;
  WaitFor(
      [&] {
        CommandResult show = Cli({"show", run_id, "--json"});
        nlohmann::json run = nlohmann::json::parse(show.out, nullptr,
                                                   /*allow_exceptions=*/false);
        state = show.exit_code == 0 && run.is_object() ? run.value("state", "")
                                                       : "";
        return !state.empty() && state != "RUN_STATE_QUEUED" &&
               state != "RUN_STATE_RUNNING";
      },
      timeout);
  return state;
}

StoredEventCounts FaultCluster::CountStoredEvents(const std::string& run_id) {
  StoredEventCounts counts;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return counts;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* count = nullptr;
  const char* sql =
      "SELECT COUNT(*), COUNT(DISTINCT attempt || '/' || rank || '/' || seq), "
      "COALESCE(SUM(error != ''), 0), COALESCE(MAX(seq), 0) FROM events "
      "WHERE run_id = ?";
  if (sqlite3_prepare_v2(db, sql, -1, &count, nullptr) == SQLITE_OK) {
    sqlite3_bind_int64(count, 1, std::stoll(run_id));
    if (sqlite3_step(count) == SQLITE_ROW) {
      counts.rows = sqlite3_column_int64(count, 0);
      counts.distinct = sqlite3_column_int64(count, 1);
      counts.errors = sqlite3_column_int64(count, 2);
      counts.max_seq = sqlite3_column_int64(count, 3);
    }
  }
  sqlite3_finalize(count);
  sqlite3_close(db);
  return counts;
}

std::string PrintFaultSummary(const std::string& fault,
                              const std::string& what_happened,
                              int64_t events_lost, int64_t stored_twice) {
  const std::string line = "FAULT " + fault + ": " + what_happened +
                           "; events lost " + std::to_string(events_lost) +
                           ", events stored twice " +
                           std::to_string(stored_twice);
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return line;
}

}  // namespace hpcai500::testing
