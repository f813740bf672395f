#include "worker/test_slowdown.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/numbers.h"

namespace hpcai500::worker {

std::chrono::milliseconds TestStepSlowdown(const EnvLookup& env) {
  const std::optional<std::string> text = env(kTestSlowStepVar);
  if (!text.has_value()) return std::chrono::milliseconds(0);
  int64_t ms = 0;
  std::string error;
  if (!ReadInt(kTestSlowStepVar, *text, 0, 10'000, &ms, &error)) {
    throw std::invalid_argument(error);
  }
  return std::chrono::milliseconds(ms);
}

}  // namespace hpcai500::worker
