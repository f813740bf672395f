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

// "queued", "starting", "running", "succeeded", "failed", "cancelled";
// "unknown" for any other value.
std::string RunStateName(v1::RunState state);

// The state RunStateName calls `name`; InvalidArgument listing the names
// for any other (UNSPECIFIED has none).
absl::StatusOr<v1::RunState> ParseRunStateName(absl::string_view name);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_RUN_STATE_H_
