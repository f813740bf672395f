#include "common/run_state.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/worker_lease.h"

namespace hpcai500 {

std::string RunStateName(v1::RunState state) {
  switch (state) {
    case v1::RUN_STATE_QUEUED:
      return "queued";
    case v1::RUN_STATE_STARTING:
      return "starting";
    case v1::RUN_STATE_RUNNING:
      return "running";
    case v1::RUN_STATE_SUCCEEDED:
      return "succeeded";
    case v1::RUN_STATE_FAILED:
      return "failed";
    case v1::RUN_STATE_CANCELLED:
      return "cancelled";
    case v1::RUN_STATE_ABORTED:
      return "aborted";
    default:
      return "unknown";
  }
}

bool HasValidResult(const v1::Run& run) {
  return run.state() == v1::RUN_STATE_SUCCEEDED && run.has_score() &&
         run.invalidated_by().empty();
}

bool IsTerminal(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED || state == v1::RUN_STATE_ABORTED;
}

absl::StatusOr<v1::RunState> ParseRunStateName(absl::string_view name) {
  std::string known;
  for (int i = v1::RunState_MIN; i <= v1::RunState_MAX; ++i) {
    const auto state = static_cast<v1::RunState>(i);
    if (!v1::RunState_IsValid(i) || state == v1::RUN_STATE_UNSPECIFIED) {
      continue;
    }
    if (RunStateName(state) == name) return state;
    absl::StrAppend(&known, known.empty() ? "" : ", ", RunStateName(state));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown state '", name, "' (expected: ", known, ")"));
}

bool IsLostWorker(const v1::WorkerExited& exit) {
  return exit.signal() != 0 || exit.error() == kWorkerLostError ||
         exit.exit_code() == kLeaseExpiredExitCode;
}

}  // namespace hpcai500
