// The GPU fast paths (issue 25, docs/design.md "Fast paths"): ways the
// worker runs the same recipe faster on a GPU, each turned on by one option
// of its own: a RunSpec bool field named `name` and the worker flag of the
// same name with '-' (fused_bn: --fused-bn). All are off by default until
// measured on a GPU; a run's spec records which were on, so that its result
// says how it was made. Standard library only: the worker links it.
//
// Thread-safe: constants.
#ifndef HPCAI500_COMMON_FAST_PATHS_H_
#define HPCAI500_COMMON_FAST_PATHS_H_

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace hpcai500 {

enum class FastPath {
  // Batch norm + ReLU and batch norm + add + ReLU as fused NHWC kernels,
  // statistics in fp32 (worker/kernels).
  kFusedBn,
  // The training step captured once as a CUDA graph and replayed.
  kCudaGraph,
  // JPEGs decoded on the GPU (nvJPEG), augmented there.
  kGpuDecode,
};

struct FastPathInfo {
  FastPath path;
  std::string_view name;  // the spec field; the worker flag with '-'
};

// The enum's comments say what each does; docs/design.md "Fast paths" too.
inline constexpr std::array<FastPathInfo, 3> kFastPaths = {{
    {FastPath::kFusedBn, "fused_bn"},
    {FastPath::kCudaGraph, "cuda_graph"},
    {FastPath::kGpuDecode, "gpu_decode"},
}};

// The names of the fast paths for which `is_on(FastPath)` is true, in
// kFastPaths' order ("fused_bn", "cuda_graph"); empty when none.
template <typename IsOn>
std::vector<std::string> FastPathNames(IsOn&& is_on) {
  std::vector<std::string> on;
  for (const FastPathInfo& info : kFastPaths) {
    if (is_on(info.path)) on.emplace_back(info.name);
  }
  return on;
}

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_FAST_PATHS_H_
