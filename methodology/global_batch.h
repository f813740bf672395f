// The global batch a run trains with, as the convergence check counts it:
// one rule for the leaderboard (server/store/leaderboard.cc) and the
// verification of result bundles (methodology/bundle_verify.cc).
//
// Thread-safe: a free function.
#ifndef HPCAI500_METHODOLOGY_GLOBAL_BATCH_H_
#define HPCAI500_METHODOLOGY_GLOBAL_BATCH_H_

#include <cstdint>

#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The per-rank batch of `spec` (the worker's default for its config and
// precision when the spec leaves it 0; 0 for a config not in `registry`)
// x nodes x ranks per node.
int64_t GlobalBatch(const v1::RunSpec& spec, const Registry& registry);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_GLOBAL_BATCH_H_
