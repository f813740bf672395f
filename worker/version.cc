#include "worker/version.h"

#include <torch/version.h>

#ifdef USE_C10D_NCCL
#include <nccl.h>  // what ProcessGroupNCCL.hpp includes in distributed.cc
#endif

#ifndef HPCAI500_VERSION
#define HPCAI500_VERSION "dev"
#endif
#ifndef HPCAI500_GIT_REVISION
#define HPCAI500_GIT_REVISION "unknown"
#endif

namespace hpcai500::worker {

namespace {

// Set by worker/CMakeLists.txt when the LibTorch found has CUDA libraries.
constexpr bool kBuiltWithCuda =
#ifdef HPCAI500_WORKER_CUDA
    true;
#else
    false;
#endif

// The NCCL headers c10d was compiled against (USE_C10D_NCCL comes with a
// LibTorch built with NCCL); "no" without.
std::string NcclVersion() {
#ifdef USE_C10D_NCCL
  return std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH);
#else
  return "no";
#endif
}

}  // namespace

std::string VersionLines() {
  return std::string("worker=") + HPCAI500_VERSION +
         " (git " HPCAI500_GIT_REVISION
         ")\n"
         "libtorch=" TORCH_VERSION
         "\n"
         "cuda=" +
         (kBuiltWithCuda ? "yes" : "no") + "\nnccl=" + NcclVersion() + "\n";
}

}  // namespace hpcai500::worker
