// The one rule between how often agents heartbeat and how long the
// coordinator waits for a silent node (hpcai500d --heartbeat-interval-s and
// --node-timeout-s): at least three beats per timeout, so one late beat
// loses nothing.
#ifndef HPCAI500_SERVER_COORDINATOR_NODE_TIMING_H_
#define HPCAI500_SERVER_COORDINATOR_NODE_TIMING_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace hpcai500 {

// The interval agents are told when hpcai500d is given none.
inline constexpr int32_t kDefaultHeartbeatIntervalMs = 5'000;

// The heartbeat interval for a node timeout of `node_timeout_ms` (> 0):
// `requested_ms`, or with 0 the default capped at a third of the timeout.
// InvalidArgument, naming both flags, when `requested_ms` is negative or
// more than a third of the timeout.
absl::StatusOr<int32_t> HeartbeatIntervalMs(int64_t node_timeout_ms,
                                            int64_t requested_ms);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_NODE_TIMING_H_
