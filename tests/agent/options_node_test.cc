// ParseAgentArgs over this node: the GPUs it counts through NVML and the
// worker's versions it asks for go into the inventory sent in Register.
#include <string>

#include "agent/options.h"
#include "common/checkpoint_manifest.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

constexpr char kCpuWorker[] =
    "echo worker=0.1.0 \\(git 1a2b3c4d5e6f\\)\n"
    "echo libtorch=1.13.0\necho cuda=no\necho nccl=no\n";

TEST(Inventory, TheAgentCountsNvmlsGpusAndSendsTheInventory) {
  absl::StatusOr<AgentOptions> options =
      ParseAgentArgs({"--coordinator", "h:1", "--name", "gpu-1",
                      "--nvml-library", AGENT_FAKE_NVML});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->gpus, 2) << "NVML's count, not /dev/nvidia*";
  EXPECT_EQ(options->slots, 2);
  ASSERT_EQ(options->inventory.devices_size(), 2);
  EXPECT_EQ(options->inventory.devices(0).model(), "NVIDIA H200");
  EXPECT_EQ(options->inventory.driver_version(), "550.54.15");

  options = ParseAgentArgs({"--coordinator", "h:1", "--name", "cpu-1",
                            "--nvml-library", "/nonexistent/libnvidia-ml.so"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->gpus, CountGpus()) << "without NVML: /dev/nvidia*";
  EXPECT_EQ(options->inventory.devices_size(), 0);
}

TEST(WorkerVersion, TheAgentPutsItsWorkersVersionsInTheInventory) {
  TempDir dir;
  absl::StatusOr<AgentOptions> options = ParseAgentArgs(
      {"--coordinator", "h:1", "--name", "n", "--workdir", dir.path() + "/w",
       "--worker", WriteScript(dir, "worker", kCpuWorker)});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->worker_version_missing, "");
  EXPECT_EQ(options->inventory.versions().at("worker"),
            "0.1.0 (git 1a2b3c4d5e6f)");
  EXPECT_EQ(options->inventory.versions().at("libtorch"), "1.13.0 (CPU)");
  std::string digest, error;
  ASSERT_TRUE(Sha256OfFile(dir.path() + "/worker", &digest, &error)) << error;
  EXPECT_EQ(options->inventory.versions().at("worker_digest"),
            digest.substr(0, 16));

  options = ParseAgentArgs({"--coordinator", "h:1", "--name", "n", "--workdir",
                            dir.path() + "/w", "--worker",
                            WriteScript(dir, "broken", "exit 1\n")});
  ASSERT_TRUE(options.ok()) << "a broken worker does not stop the agent";
  EXPECT_NE(options->worker_version_missing.find("exited 1"), std::string::npos)
      << options->worker_version_missing;
  EXPECT_EQ(options->inventory.versions().count("libtorch"), 0u);
}

}  // namespace
}  // namespace hpcai500::agent
