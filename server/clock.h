// The coordinator's source of time, behind an interface so tests can step it.
//
// Thread-safe: implementations must allow concurrent calls.
#ifndef HPCAI500_SERVER_CLOCK_H_
#define HPCAI500_SERVER_CLOCK_H_

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

class RealClock final : public Clock {
 public:
  int64_t NowMs() override { return absl::ToUnixMillis(absl::Now()); }
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_CLOCK_H_
