// The one rule for how long a node may stay silent before it is given up:
// the coordinator then declares it lost (its runs get new attempts), and
// its agent fences its workers (and lets their leases run out). Both sides
// count from the same point, so a node is never given up by one side and
// kept by the other: the last word, or the end of a maintenance window
// (`hpcai500 maintenance start`) when that is later, plus the node timeout.
// A window thus lets hpcai500d stay stopped until its end without a restart
// of any run.
//
// Standard library only: every binary may include it. Thread-safe: a pure
// function.
#ifndef HPCAI500_COMMON_SILENCE_DEADLINE_H_
#define HPCAI500_COMMON_SILENCE_DEADLINE_H_

#include <algorithm>
#include <cstdint>

namespace hpcai500 {

// Until when (Unix ms) a node last heard at `last_heard_ms` is kept:
// max(last_heard_ms, maintenance_until_ms) + node_timeout_ms.
// `maintenance_until_ms` is 0 without a window; a window that ended before
// the last word changes nothing.
inline int64_t SilenceDeadlineMs(int64_t last_heard_ms,
                                 int64_t maintenance_until_ms,
                                 int64_t node_timeout_ms) {
  return std::max(last_heard_ms, maintenance_until_ms) + node_timeout_ms;
}

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_SILENCE_DEADLINE_H_
