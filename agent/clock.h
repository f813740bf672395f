// The agent's view of time, behind an interface so tests can move it by hand.
//
// Thread-safe: implementations must be.
#ifndef HPCAI500_AGENT_CLOCK_H_
#define HPCAI500_AGENT_CLOCK_H_

#include <cstdint>

namespace hpcai500::agent {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() = 0;
};

// The system clock.
class RealClock final : public Clock {
 public:
  int64_t NowMs() override;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_CLOCK_H_
