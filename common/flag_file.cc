#include "common/flag_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hpcai500 {

absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag,
                                         const std::string& path,
                                         size_t max_bytes) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(flag, " ", path, ": cannot read (",
                                            std::strerror(errno), ")"));
  }
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0 &&
         text.size() <= max_bytes) {
    text.append(buffer, n);
  }
  const int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return absl::NotFoundError(absl::StrCat(flag, " ", path, ": cannot read (",
                                            std::strerror(read_errno), ")"));
  }
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " ", path, ": is larger than ", max_bytes, " bytes"));
  }
  return text;
}

}  // namespace hpcai500
