#include "common/numbers.h"

#include <cerrno>
#include <cstdlib>

namespace hpcai500 {

std::optional<int64_t> ParseInt(const std::string& text, int64_t low,
                                int64_t high) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size() || v < low || v > high) {
    return std::nullopt;
  }
  return v;
}

bool ReadInt(const std::string& name, const std::string& text, int64_t low,
             int64_t high, int64_t* out, std::string* error) {
  std::optional<int64_t> v = ParseInt(text, low, high);
  if (!v) {
    *error = name + ": '" + text + "' is not an integer in [" +
             std::to_string(low) + ", " + std::to_string(high) + "]";
    return false;
  }
  *out = *v;
  return true;
}

std::optional<double> ParseNumberAbove(const std::string& text, double low,
                                       double high) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !(v > low) ||
      v > high) {
    return std::nullopt;
  }
  return v;
}

}  // namespace hpcai500
