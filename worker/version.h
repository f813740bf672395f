// What this hpcai500-worker binary is, for `hpcai500-worker --version`: the
// agent runs that once at start and puts the answers in its node's
// inventory (agent/inventory.h), so they reach every result's provenance.
//
// Thread-safe: a pure function.
#ifndef HPCAI500_WORKER_VERSION_H_
#define HPCAI500_WORKER_VERSION_H_

#include <string>

namespace hpcai500::worker {

// One `key=value` line each, in this order:
//   worker=0.1.0 (git 1a2b3c4d5e6f)  the project version and the git
//                                    revision CMake saw at configure time
//                                    ("unknown" outside a git checkout)
//   libtorch=1.13.0                  TORCH_VERSION of torch/version.h
//   cuda=yes|no                      built against a CUDA LibTorch
//   nccl=2.21.5|no                   the NCCL headers its c10d was built
//                                    with
std::string VersionLines();

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_VERSION_H_
