#include "common/lease_holder.h"

#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/numbers.h"

namespace hpcai500 {

std::function<bool()> ParentIsHolder(const char* holder_pid) {
  if (holder_pid == nullptr) return nullptr;
  const std::string text = holder_pid;
  // ParseInt allows blanks and a sign; a pid is plain digits.
  if (text.empty() || text.size() > 10) return nullptr;
  for (char c : text) {
    if (c < '0' || c > '9') return nullptr;
  }
  // Init (1) adopts the orphans of a killed agent: never their holder.
  const std::optional<int64_t> pid = ParseInt(text, 2, INT32_MAX);
  if (!pid) return nullptr;
  return [holder = static_cast<pid_t>(*pid)] { return ::getppid() == holder; };
}

}  // namespace hpcai500
