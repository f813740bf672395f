// The agent's NVML reader (agent/node/nvml.h) on the real driver, where a GPU
// is (label gpu): every GPU with a model and memory, and the driver version, as
// nvidia-smi reports them when it is there. Skipped, saying why, where the
// driver's libnvidia-ml.so.1 does not load or sees no GPU. Std-only, so it also
// runs in a worker-only build.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "agent/node/nvml.h"

namespace hpcai500::agent {
namespace {

// One line of `nvidia-smi --query-gpu=name,memory.total,driver_version
// --format=csv,noheader,nounits`.
struct SmiGpu {
  std::string name;
  int64_t memory_mib = 0;
  std::string driver;
};

// What nvidia-smi says of every GPU; nullopt where it cannot be run.
std::optional<std::vector<SmiGpu>> AskNvidiaSmi() {
  FILE* pipe = ::popen(
      "nvidia-smi --query-gpu=name,memory.total,driver_version "
      "--format=csv,noheader,nounits 2>/dev/null",
      "r");
  if (pipe == nullptr) return std::nullopt;
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) {
    text.append(buffer, n);
  }
  if (::pclose(pipe) != 0) return std::nullopt;
  std::vector<SmiGpu> gpus;
  std::istringstream lines(text);
  const std::regex row(R"(^\s*(.*?)\s*,\s*(\d+)\s*,\s*(\S+)\s*$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    gpus.push_back({m[1], std::stoll(m[2]), m[3]});
  }
  return gpus;
}

TEST(NvmlOnAGpu, ReadsEveryGpuWithModelMemoryAndTheDriver) {
  const NvmlReading nvml = ReadNvml("libnvidia-ml.so.1", /*max_gpus=*/64);
  if (!nvml.loaded) GTEST_SKIP() << "no CUDA device: NVML: " << nvml.why;
  if (nvml.gpus.empty()) GTEST_SKIP() << "no CUDA device: NVML sees no GPU";

  EXPECT_TRUE(
      std::regex_match(nvml.driver_version, std::regex(R"(\d+\.\d+.*)")))
      << "driver '" << nvml.driver_version << "'";
  for (size_t i = 0; i < nvml.gpus.size(); ++i) {
    const NvmlGpu& gpu = nvml.gpus[i];
    EXPECT_EQ(gpu.index, static_cast<int>(i));
    EXPECT_FALSE(gpu.model.empty()) << "GPU " << i;
    EXPECT_GT(gpu.memory_bytes, int64_t{1} << 30) << "GPU " << i;
    EXPECT_GE(gpu.nvlink_links, 0);
    EXPECT_LE(gpu.nvlink_links, 18);
    std::printf("GPU %d: %s, %lld MiB, %d NVLink links; driver %s\n", gpu.index,
                gpu.model.c_str(),
                static_cast<long long>(gpu.memory_bytes >> 20),
                gpu.nvlink_links, nvml.driver_version.c_str());
  }

  // The same GPUs as nvidia-smi (which reads the same NVML), where it is.
  const std::optional<std::vector<SmiGpu>> smi = AskNvidiaSmi();
  if (!smi) {
    std::printf("nvidia-smi is not here: NVML alone checked\n");
    return;
  }
  ASSERT_EQ(smi->size(), nvml.gpus.size());
  for (size_t i = 0; i < smi->size(); ++i) {
    EXPECT_EQ(nvml.gpus[i].model, (*smi)[i].name) << "GPU " << i;
    // nvidia-smi may ask NVML's newer memory call: within 1%.
    EXPECT_NEAR(static_cast<double>(nvml.gpus[i].memory_bytes >> 20),
                static_cast<double>((*smi)[i].memory_mib),
                0.01 * static_cast<double>((*smi)[i].memory_mib))
        << "GPU " << i;
    EXPECT_EQ(nvml.driver_version, (*smi)[i].driver) << "GPU " << i;
  }
}

TEST(NvmlOnAGpu, ReadsNoMoreGpusThanAsked) {
  const NvmlReading nvml = ReadNvml("libnvidia-ml.so.1", /*max_gpus=*/1);
  if (!nvml.loaded) GTEST_SKIP() << "no CUDA device: NVML: " << nvml.why;
  EXPECT_LE(nvml.gpus.size(), 1u);
  EXPECT_FALSE(nvml.driver_version.empty());
}

}  // namespace
}  // namespace hpcai500::agent
