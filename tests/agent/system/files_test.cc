// The file helpers: partial reads, and links made or copied.
#include "agent/system/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

dev_t Device(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_dev;
}

TEST(LinkOrCopyFile, HardLinksOnOneFileSystem) {
  TempDir dir;
  AppendToFile(dir.path() + "/source", "weights");
  ASSERT_TRUE(
      LinkOrCopyFile(dir.path() + "/source", dir.path() + "/target").ok());
  EXPECT_EQ(ReadFile(dir.path() + "/target"), "weights");
  EXPECT_EQ(Inode(dir.path() + "/target"), Inode(dir.path() + "/source"));
}

TEST(LinkOrCopyFile, KeepsATargetThatIsAlreadyThere) {
  TempDir dir;
  AppendToFile(dir.path() + "/source", "new");
  AppendToFile(dir.path() + "/target", "linked by another node");
  EXPECT_TRUE(
      LinkOrCopyFile(dir.path() + "/source", dir.path() + "/target").ok());
  EXPECT_EQ(ReadFile(dir.path() + "/target"), "linked by another node");
}

TEST(LinkOrCopyFile, MissingSourceIsNotFound) {
  TempDir dir;
  absl::Status status =
      LinkOrCopyFile(dir.path() + "/missing", dir.path() + "/target");
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_NE(status.message().find(dir.path() + "/missing"), std::string::npos);
  EXPECT_FALSE(FileExists(dir.path() + "/target"));
}

// link() fails with EXDEV across file systems: the file is copied whole.
TEST(LinkOrCopyFile, CopiesAcrossFileSystems) {
  TempDir dir;
  if (!std::filesystem::is_directory("/dev/shm") ||
      Device("/dev/shm") == Device(dir.path())) {
    GTEST_SKIP() << "needs /dev/shm on another file system than " << dir.path();
  }
  const std::string source = dir.path() + "/source";
  AppendToFile(source, std::string(1 << 20, 'w'));
  const std::string target =
      "/dev/shm/hpcai500-files-test-" + std::to_string(::getpid());
  absl::Status status = LinkOrCopyFile(source, target);
  const std::string copied = ReadFile(target);
  std::filesystem::remove(target);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(copied, std::string(1 << 20, 'w'));
}

TEST(ReadFileHead, ReadsAtMostTheBoundAlsoFromProc) {
  TempDir dir;
  const std::string path = dir.path() + "/big";
  AppendToFile(path, std::string(100, 'a') + std::string(100, 'b'));
  EXPECT_EQ(ReadFileHead(path, 100), std::string(100, 'a'));
  EXPECT_EQ(ReadFileHead(path, 1000).size(), 200u);
  EXPECT_EQ(ReadFileHead(dir.path() + "/missing", 100), "");
  // /proc files report a size of 0 yet have contents.
  EXPECT_FALSE(ReadFileHead("/proc/self/stat", 4096).empty());
}

}  // namespace
}  // namespace hpcai500::agent
