#include "server/coordinator/node_timing.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hpcai500 {

absl::StatusOr<int32_t> HeartbeatIntervalMs(int64_t node_timeout_ms,
                                            int64_t requested_ms) {
  const int64_t most_ms = node_timeout_ms / 3;
  if (requested_ms == 0) {
    return static_cast<int32_t>(std::max<int64_t>(
        1, std::min<int64_t>(kDefaultHeartbeatIntervalMs, most_ms)));
  }
  if (requested_ms < 0 || requested_ms > most_ms) {
    return absl::InvalidArgumentError(
        absl::StrCat("--heartbeat-interval-s ", requested_ms / 1000.0,
                     " must be at most a third of --node-timeout-s ",
                     node_timeout_ms / 1000.0, " (", most_ms / 1000.0,
                     " s), so that one late heartbeat does not lose a node"));
  }
  return static_cast<int32_t>(requested_ms);
}

}  // namespace hpcai500
