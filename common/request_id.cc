#include "common/request_id.h"

#include <algorithm>
#include <cstdint>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/printable.h"

namespace hpcai500 {
namespace {

bool IsRequestIdCharacter(char c) {
  return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
}

}  // namespace

absl::Status CheckRequestId(std::string_view id) {
  if (!id.empty() && id.size() <= kMaxRequestIdBytes &&
      std::all_of(id.begin(), id.end(), IsRequestIdCharacter)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "request id '", EscapeControlCharacters(id.substr(0, 64), false),
      "' must be 1 to ", kMaxRequestIdBytes,
      " letters, digits, '-', '_', '.' and ':'"));
}

std::string NewRequestId() {
  // random_device reads the kernel's random source (getrandom, /dev/urandom).
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppendFormat(&id, "%08x", static_cast<uint32_t>(random()));
  }
  return id;
}

}  // namespace hpcai500
