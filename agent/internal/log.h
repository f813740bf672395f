// Operator log lines for the agent: one line per event (a worker started,
// exited, was cancelled; the stream connected or broke), written to stderr
// with a UTC timestamp and the node name. Never one line per event batch.
//
// Thread-safe: each call writes one whole line.
#ifndef HPCAI500_AGENT_INTERNAL_LOG_H_
#define HPCAI500_AGENT_INTERNAL_LOG_H_

#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent_internal {

// Sets the node name shown on every line (once, at start-up).
void SetLogNode(absl::string_view node);

void LogInfo(absl::string_view message);
void LogWarning(absl::string_view message);
void LogError(absl::string_view message);

// "run=3 attempt=1 rank=0" (rank omitted when < 0): the prefix that ties a
// line to a worker.
std::string Where(const v1::AttemptKey& key, int rank = -1);

}  // namespace hpcai500::agent_internal

#endif  // HPCAI500_AGENT_INTERNAL_LOG_H_
