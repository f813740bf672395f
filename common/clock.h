// The source of wall-clock time for the coordinator and the agent, behind an
// interface so tests can step it by hand.
//
// Thread-safe: implementations must allow concurrent calls.
#ifndef HPCAI500_COMMON_CLOCK_H_
#define HPCAI500_COMMON_CLOCK_H_

#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hpcai500 {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() = 0;
};

// The system clock.
class RealClock final : public Clock {
 public:
  int64_t NowMs() override { return absl::ToUnixMillis(absl::Now()); }
};

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_CLOCK_H_
