// A Clock that a test moves by hand (now_ms), for the coordinator's tests.
//
// Not thread-safe: the test thread moves it between calls.
#ifndef HPCAI500_TESTS_COMMON_FAKE_CLOCK_H_
#define HPCAI500_TESTS_COMMON_FAKE_CLOCK_H_

#include <cstdint>

#include "common/clock.h"

namespace hpcai500::testing {

class FakeClock final : public Clock {
 public:
  int64_t NowMs() override { return now_ms; }
  int64_t now_ms = 1'700'000'000'000;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_COMMON_FAKE_CLOCK_H_
