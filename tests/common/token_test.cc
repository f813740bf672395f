#include "common/token.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

namespace fs = std::filesystem;

class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hpcai500-token-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to a file in the test's folder; returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(TokenTest, ReadsTheFileTrimmed) {
  absl::StatusOr<std::string> token =
      ReadTokenFile("--token-file", Write("t", "  s3cret\n\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cret");
}

TEST_F(TokenTest, RefusesAMissingFileNamingTheFlagAndPath) {
  const std::string path = (dir_ / "missing").string();
  absl::StatusOr<std::string> token = ReadTokenFile("--token-file", path);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(token.status().message().rfind(
                "--token-file " + path + ": cannot read", 0),
            0u)
      << token.status();
}

TEST_F(TokenTest, RefusesADirectory) {
  absl::StatusOr<std::string> token =
      ReadTokenFile("--token-file", dir_.string());
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("cannot read"), std::string::npos)
      << token.status();
}

TEST_F(TokenTest, RefusesABlankFile) {
  const std::string path = Write("blank", " \n\t\n");
  absl::StatusOr<std::string> token = ReadTokenFile("--token-file", path);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(token.status().message(), "--token-file " + path + ": is empty");
}

TEST_F(TokenTest, RefusesAFileFarLargerThanAToken) {
  const std::string path =
      Write("big", std::string(kMaxTokenFileBytes + 1, 'x'));
  absl::StatusOr<std::string> token = ReadTokenFile("--token-file", path);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("is larger than"), std::string::npos)
      << token.status();
}

TEST_F(TokenTest, ResolvePrefersTokenThenFileThenEnvironment) {
  const std::string path = Write("t", "from-file\n");
  EXPECT_EQ(*ResolveToken({"from-flag", ""}, "from-env"), "from-flag");
  EXPECT_EQ(*ResolveToken({"", path}, "from-env"), "from-file");
  EXPECT_EQ(*ResolveToken({"", ""}, " from-env\n"), "from-env");
  EXPECT_EQ(*ResolveToken({"", ""}, std::nullopt), "");
  EXPECT_EQ(*ResolveToken({"", ""}, ""), "");
}

TEST_F(TokenTest, ResolveReportsAnUnreadableFile) {
  absl::StatusOr<std::string> token =
      ResolveToken({"", (dir_ / "missing").string()}, "from-env");
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("--token-file"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500
