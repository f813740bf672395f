#include "agent/clock.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hpcai500::agent {

int64_t RealClock::NowMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace hpcai500::agent
