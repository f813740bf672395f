#include "server/coordinator/metrics.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/run_state.h"

namespace hpcai500 {

std::string PrometheusText(const MetricsSnapshot& snapshot) {
  std::string text =
      "# HELP hpcai500_runs Runs by state.\n# TYPE hpcai500_runs gauge\n";
  std::map<v1::RunState, int64_t> counts;
  for (int s = v1::RunState_MIN; s <= v1::RunState_MAX; ++s) {
    if (s != v1::RUN_STATE_UNSPECIFIED) counts[static_cast<v1::RunState>(s)];
  }
  for (const auto& [state, count] : snapshot.runs_by_state) {
    counts[state] = count;
  }
  for (const auto& [state, count] : counts) {
    absl::StrAppend(&text, "hpcai500_runs{state=\"", RunStateName(state),
                    "\"} ", count, "\n");
  }
  absl::StrAppend(
      &text,
      "# HELP hpcai500_queue_length Runs waiting for nodes.\n"
      "# TYPE hpcai500_queue_length gauge\n"
      "hpcai500_queue_length ",
      snapshot.queue_length,
      "\n# HELP hpcai500_nodes_connected Agents connected now.\n"
      "# TYPE hpcai500_nodes_connected gauge\n"
      "hpcai500_nodes_connected ",
      snapshot.nodes_connected,
      "\n# HELP hpcai500_nodes_known Nodes ever registered.\n"
      "# TYPE hpcai500_nodes_known gauge\n"
      "hpcai500_nodes_known ",
      snapshot.nodes_known,
      "\n# HELP hpcai500_events_ingested_total Event lines stored.\n"
      "# TYPE hpcai500_events_ingested_total counter\n"
      "hpcai500_events_ingested_total ",
      snapshot.events_ingested,
      "\n# HELP hpcai500_store_failing 1 while writes to the database fail "
      "(a full disk, an I/O error); events wait at the agents.\n"
      "# TYPE hpcai500_store_failing gauge\n"
      "hpcai500_store_failing ",
      snapshot.store_failing ? 1 : 0,
      "\n# HELP hpcai500_store_write_errors_total Writes to the database "
      "that failed and are retried.\n"
      "# TYPE hpcai500_store_write_errors_total counter\n"
      "hpcai500_store_write_errors_total ",
      snapshot.store_write_errors, "\n");
  absl::StrAppend(&text,
                  "# HELP hpcai500_ingest_lag_seconds From an event's time "
                  "(the worker's clock) to its storing.\n"
                  "# TYPE hpcai500_ingest_lag_seconds histogram\n");
  AppendHistogramText("hpcai500_ingest_lag_seconds", "", snapshot.ingest_lag,
                      &text);
  absl::StrAppend(&text,
                  "# HELP hpcai500_scheduler_pass_seconds Time of each "
                  "scheduler pass.\n"
                  "# TYPE hpcai500_scheduler_pass_seconds histogram\n");
  AppendHistogramText("hpcai500_scheduler_pass_seconds", "",
                      snapshot.scheduler_pass, &text);
  return text;
}

}  // namespace hpcai500
