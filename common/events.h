// Worker event lines: the MLPerf-style `:::MLLOG {...}` lines each worker
// rank appends to its event file. They are the contract between the worker
// (which writes them), the agent (which forwards them keyed by
// (run, attempt, rank, seq)) and the coordinator (which stores and scores
// them). Fixture files in tests/fixtures/events/ pin the format; the worker's
// tests produce the same shape. docs/events.md lists every key.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_EVENTS_H_
#define HPCAI500_COMMON_EVENTS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {

// The prefix of every event line.
inline constexpr std::string_view kMllogPrefix = ":::MLLOG ";

// The most a single event line may hold; longer lines are refused.
inline constexpr size_t kMaxEventLineBytes = 64 * 1024;

struct EventLine {
  std::string key;         // run_start, epoch_stop, eval_accuracy, ...
  std::string event_type;  // POINT_IN_TIME | INTERVAL_START | INTERVAL_END
  int64_t time_ms = 0;
  int64_t seq = 0;          // metadata.seq: 1, 2, ... per (attempt, rank)
  int rank = 0;             // metadata.rank
  nlohmann::json value;     // null when absent
  nlohmann::json metadata;  // always an object
  // metadata.epoch_num when present, else -1.
  int epoch() const;
};

// Parses one line (with or without a trailing newline). Returns
// InvalidArgument naming what is wrong: missing prefix, bad JSON, a missing
// or mistyped key/time_ms/event_type/metadata.seq/metadata.rank, a line over
// kMaxEventLineBytes, or seq < 1.
absl::StatusOr<EventLine> ParseEventLine(std::string_view line);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_EVENTS_H_
