// A run's state by the lower-case name people see: the CLI prints it, the
// HTTP API's ?state= filter and `hpcai500 list --state` take it.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_RUN_STATE_H_
#define HPCAI500_COMMON_RUN_STATE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// "queued", "starting", "running", "succeeded", "failed", "cancelled",
// "aborted"; "unknown" for any other value.
std::string RunStateName(v1::RunState state);

// The state RunStateName calls `name`; InvalidArgument listing the names
// for any other (UNSPECIFIED has none).
absl::StatusOr<v1::RunState> ParseRunStateName(absl::string_view name);

// Whether a run in `state` ended (succeeded, failed, cancelled or aborted):
// it will not run again.
bool IsTerminal(v1::RunState state);

// Whether `run` holds a result that counts: it succeeded with a score and
// no admin invalidated it. The leaderboard, the scaling page and regress's
// series count only these.
bool HasValidResult(const v1::Run& run);

// The error an agent reports for a rank whose worker ended while the agent
// was down and left no run_stop: its outcome is unknown, as after a node
// loss.
inline constexpr char kWorkerLostError[] =
    "worker lost while the agent was down";

// Whether a rank's exit says its worker was lost (killed by a signal,
// kWorkerLostError, or fenced by its lease: kLeaseExpiredExitCode) rather
// than failed by its own training: a new attempt of the run may succeed.
bool IsLostWorker(const v1::WorkerExited& exit);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_RUN_STATE_H_
