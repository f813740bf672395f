#include "worker/test_slowdown.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/numbers.h"

namespace hpcai500::worker {

int TestStepSlowdownPct(const EnvLookup& env) {
  const std::optional<std::string> text = env(kTestSlowStepVar);
  if (!text.has_value()) return 0;
  int64_t pct = 0;
  std::string error;
  if (!ReadInt(kTestSlowStepVar, *text, 0, 1'000, &pct, &error)) {
    throw std::invalid_argument(error);
  }
  return static_cast<int>(pct);
}

std::string TestSlowdownGate(const EnvLookup& env) {
  return env(kTestSlowWhileVar).value_or("");
}

}  // namespace hpcai500::worker
