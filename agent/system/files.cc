// Atomic writes, whole or partial reads, folders and links for the agent's
// state files.
#include "agent/system/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace hpcai500::agent {

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& contents) {
  std::string temp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", temp, ": ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n =
        ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return absl::InternalError(
          absl::StrCat("cannot write ", temp, ": ", std::strerror(err)));
    }
    written += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", temp, " to ",
                                            path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ReadFileHead(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string head(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ssize_t n = ::read(fd, head.data() + got, max_bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  head.resize(got);
  return head;
}

std::string ReadFileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff start =
      size > static_cast<std::streamoff>(max_bytes) ? size - max_bytes : 0;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  return tail;
}

absl::Status MakeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create directory ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

namespace {

// Copies `from` to `to` through a flushed temporary file and a rename.
absl::Status CopyFileAtomically(const std::string& from,
                                const std::string& to) {
  const std::string temp = absl::StrCat(to, ".tmp.", ::getpid());
  std::error_code ec;
  std::filesystem::copy_file(
      from, temp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) {
    int fd = ::open(temp.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    if (::rename(temp.c_str(), to.c_str()) != 0) {
      ec = std::error_code(errno, std::generic_category());
    }
  }
  if (ec) {
    ::unlink(temp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot copy ", from, " to ", to, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LinkOrCopyFile(const std::string& from, const std::string& to) {
  if (FileExists(to)) return absl::OkStatus();
  if (::link(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
  const int err = errno;
  if (err == EEXIST) return absl::OkStatus();  // linked meanwhile
  if (!FileExists(from)) {
    return absl::NotFoundError(absl::StrCat(from, " does not exist"));
  }
  absl::Status copied = CopyFileAtomically(from, to);
  if (!copied.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot link ", from, " to ", to, " (", std::strerror(err),
                     ") nor copy it: ", copied.message()));
  }
  return absl::OkStatus();
}

}  // namespace hpcai500::agent
