#include "common/token.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/flag_file.h"
#include "common/status_macros.h"

namespace hpcai500 {

absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag,
                                          const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text,
                   ReadFlagFile(flag, path, kMaxTokenFileBytes));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": is empty"));
  }
  return token;
}

absl::StatusOr<std::string> ResolveToken(
    const TokenFlags& flags, const std::optional<std::string>& env) {
  if (!flags.token.empty()) return flags.token;
  if (!flags.token_file.empty()) {
    return ReadTokenFile("--token-file", flags.token_file);
  }
  if (env.has_value()) return std::string(absl::StripAsciiWhitespace(*env));
  return std::string();
}

}  // namespace hpcai500
