// AskWorkerVersion: the worker's --version lines, from scripts that answer,
// fail, say something else or hang.
#include "agent/node/worker_version.h"

#include <chrono>
#include <string>

#include "agent/system/process.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

constexpr char kCpuWorker[] =
    "echo worker=0.1.0 \\(git 1a2b3c4d5e6f\\)\n"
    "echo libtorch=1.13.0\necho cuda=no\necho nccl=no\n";

TEST(WorkerVersion, ParsesKeyValueLinesAndSkipsTheRest) {
  const auto lines = ParseWorkerVersionLines(
      "worker=0.1.0 (git abc)\n libtorch = 2.5.1 \nnoise\n=x\ncuda=yes\r\n");
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines.at("worker"), "0.1.0 (git abc)");
  EXPECT_EQ(lines.at("libtorch"), "2.5.1");
  EXPECT_EQ(lines.at("cuda"), "yes");
}

TEST(WorkerVersion, AddsTheRevisionAndTheLibTorchBuildToTheInventory) {
  v1::Inventory inventory;
  AddWorkerVersions({{"worker", "0.1.0 (git abc)"},
                     {"libtorch", "2.5.1"},
                     {"cuda", "yes"},
                     {"nccl", "2.21.5"}},
                    &inventory);
  EXPECT_EQ(inventory.versions().at("worker"), "0.1.0 (git abc)");
  EXPECT_EQ(inventory.versions().at("libtorch"), "2.5.1 (CUDA, NCCL 2.21.5)");
  AddWorkerVersions({{"libtorch", "1.13.0"}, {"cuda", "no"}, {"nccl", "no"}},
                    &inventory);
  EXPECT_EQ(inventory.versions().at("libtorch"), "1.13.0 (CPU)");
  v1::Inventory none;
  AddWorkerVersions({}, &none);
  EXPECT_EQ(none.versions_size(), 0);
}

TEST(WorkerVersion, AsksARealProcessForItsLines) {
  TempDir dir;
  PosixProcessLauncher launcher;
  absl::StatusOr<std::map<std::string, std::string>> lines = AskWorkerVersion(
      WriteScript(dir, "worker", kCpuWorker), absl::Seconds(10), launcher);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(lines->at("worker"), "0.1.0 (git 1a2b3c4d5e6f)");
  EXPECT_EQ(lines->at("libtorch"), "1.13.0");
}

TEST(WorkerVersion, AFailingMissingOrForeignWorkerSaysWhy) {
  TempDir dir;
  PosixProcessLauncher launcher;
  absl::StatusOr<std::map<std::string, std::string>> failed = AskWorkerVersion(
      WriteScript(dir, "failing", "exit 3\n"), absl::Seconds(10), launcher);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("--version exited 3"),
            std::string::npos)
      << failed.status();
  absl::StatusOr<std::map<std::string, std::string>> missing =
      AskWorkerVersion(dir.path() + "/absent", absl::Seconds(10), launcher);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos)
      << missing.status();
  absl::StatusOr<std::map<std::string, std::string>> foreign = AskWorkerVersion(
      WriteScript(dir, "foreign", "echo 1.0\n"), absl::Seconds(10), launcher);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("no worker= line"),
            std::string::npos)
      << foreign.status();
}

TEST(WorkerVersion, AHangingWorkerIsKilledAtTheTimeout) {
  TempDir dir;
  PosixProcessLauncher launcher;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::map<std::string, std::string>> hung =
      AskWorkerVersion(WriteScript(dir, "hanging", "exec sleep 60\n"),
                       absl::Milliseconds(300), launcher);
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(waited, std::chrono::seconds(10)) << "not waited for sleep 60";
}

}  // namespace
}  // namespace hpcai500::agent
