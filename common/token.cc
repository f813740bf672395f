#include "common/token.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace hpcai500 {

absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag,
                                          const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(flag, " ", path, ": cannot read (",
                                            std::strerror(errno), ")"));
  }
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0 &&
         text.size() <= kMaxTokenFileBytes) {
    text.append(buffer, n);
  }
  const int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return absl::NotFoundError(absl::StrCat(flag, " ", path, ": cannot read (",
                                            std::strerror(read_errno), ")"));
  }
  if (text.size() > kMaxTokenFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " ", path, ": is larger than ", kMaxTokenFileBytes, " bytes"));
  }
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
