// Why a gpu-labelled test is skipped, in one wording for all of them
// (worker_gpu_test): how many CUDA devices LibTorch sees against how many
// the test needs, and HPCAI500_GPU_TESTS_ON_CPU=1, which runs the cases
// that can also check themselves on the CPU there.
#ifndef HPCAI500_TESTS_WORKER_GPU_SKIP_H_
#define HPCAI500_TESTS_WORKER_GPU_SKIP_H_

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>

namespace hpcai500::testing {

// Whether HPCAI500_GPU_TESTS_ON_CPU=1 asks the cases that can to run on the
// CPU (a check of the tests themselves on a machine without a GPU).
inline bool OnCpuInstead() {
  const char* value = std::getenv("HPCAI500_GPU_TESTS_ON_CPU");
  return value != nullptr && std::string(value) == "1";
}

// Why a test needing `gpus` GPUs cannot run here; "" when it can.
inline std::string GpuShortage(int gpus) {
  const int seen = torch::cuda::is_available()
                       ? static_cast<int>(torch::cuda::device_count())
                       : 0;
  if (seen >= gpus) return "";
  const std::string why =
      "LibTorch " TORCH_VERSION " sees " + std::to_string(seen) +
      " GPU(s): no NVIDIA driver or GPU on this machine, or "
      "CUDA_VISIBLE_DEVICES hides them";
  if (gpus == 1) return "no CUDA device: " + why;
  return "fewer than " + std::to_string(gpus) + " GPUs: " + why;
}

// Why a test needing `gpus` GPUs is skipped here, "" when it runs: it runs
// where they are, and where `cpu_too` and OnCpuInstead().
inline std::string GpuSkipReason(int gpus, bool cpu_too) {
  return cpu_too && OnCpuInstead() ? "" : GpuShortage(gpus);
}

}  // namespace hpcai500::testing

// Skips the test, saying why, unless `gpus` GPUs are here (or `cpu_too` and
// HPCAI500_GPU_TESTS_ON_CPU=1).
#define SKIP_UNLESS_GPUS(gpus, cpu_too)                      \
  if (const std::string why =                                \
          ::hpcai500::testing::GpuSkipReason(gpus, cpu_too); \
      !why.empty())                                          \
  GTEST_SKIP() << why

#endif  // HPCAI500_TESTS_WORKER_GPU_SKIP_H_
