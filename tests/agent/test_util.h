// Temporary directories, file appends and scripts for the agent's tests;
// reading files and watching processes come from tests/worker/test_util.h,
// shared with the integration harness.
#ifndef HPCAI500_TESTS_AGENT_TEST_UTIL_H_
#define HPCAI500_TESTS_AGENT_TEST_UTIL_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/worker/test_util.h"

namespace hpcai500::agent {

// A fresh directory under $TMPDIR, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "hpcai500-agent-test-XXXXXX")
            .string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void AppendToFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

// Writes an executable shell script `name` into `dir` and returns its path.
inline std::string WriteScript(const TempDir& dir, const std::string& name,
                               const std::string& body) {
  const std::string path = dir.path() + "/" + name;
  AppendToFile(path, "#!/bin/sh\n" + body);
  ::chmod(path.c_str(), 0755);
  return path;
}

// The inode number of path (0 when it cannot be read): equal for a file and
// its hard link.
inline ino_t Inode(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

using ::hpcai500::testing::ProcessAlive;
using ::hpcai500::testing::ReadFile;
using ::hpcai500::testing::WaitFor;

}  // namespace hpcai500::agent

#endif  // HPCAI500_TESTS_AGENT_TEST_UTIL_H_
