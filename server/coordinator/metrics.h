// The coordinator's /metrics page: a snapshot of its counters, written as
// Prometheus text exposition (version 0.0.4).
//
// Thread-safe: a plain value type and a free function.
#ifndef HPCAI500_SERVER_COORDINATOR_METRICS_H_
#define HPCAI500_SERVER_COORDINATOR_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// What /metrics reports, gathered by the coordinator under its lock.
struct MetricsSnapshot {
  // Stored runs by state; states left out count 0.
  std::vector<std::pair<v1::RunState, int64_t>> runs_by_state;
  int64_t queue_length = 0;        // runs waiting for nodes
  int64_t nodes_connected = 0;     // agents connected now
  int64_t nodes_known = 0;         // nodes ever registered
  int64_t events_ingested = 0;     // event lines stored
  bool store_failing = false;      // writes to the database fail now
  int64_t store_write_errors = 0;  // failed writes (full disk, I/O, lock)
  // Seconds from an event's time_ms (the worker's clock) to its storing
  // (the coordinator's), of every event stored.
  Histogram::Snapshot ingest_lag;
  // Seconds each scheduler pass took (passes the scheduler skipped, with
  // nothing changed, are not counted).
  Histogram::Snapshot scheduler_pass;
};

// The Prometheus text of `snapshot`: hpcai500_runs{state="..."} for every
// run state but UNSPECIFIED, hpcai500_queue_length, hpcai500_nodes_connected,
// hpcai500_nodes_known, hpcai500_events_ingested_total,
// hpcai500_store_failing, hpcai500_store_write_errors_total and the histograms
// hpcai500_ingest_lag_seconds and hpcai500_scheduler_pass_seconds, each with
// its HELP and TYPE lines.
std::string PrometheusText(const MetricsSnapshot& snapshot);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_METRICS_H_
