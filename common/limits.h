// The bounds of the run fields that more than one process checks: the spec
// parser (methodology/spec.cc), the agent's assignment checks and the worker's
// flag table (common/worker_args.cc) all read them here, so a value one side
// accepts the next side accepts too. Standard library only: the worker links
// it without abseil or protobuf.
//
// Thread-safe: constants.
#ifndef HPCAI500_COMMON_LIMITS_H_
#define HPCAI500_COMMON_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <limits>

namespace hpcai500 {

// Fields that reach the worker (RunSpec field and worker flag alike).
inline constexpr int kMaxBatchSize = 65536;  // per rank
inline constexpr int kMaxEpochs = 100000;
// A spec's seed fits 31 bits; the worker's --seed takes any non-negative
// int64, so a hand run may use a wider one.
inline constexpr int64_t kMaxSpecSeed = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxWorkerSeed = std::numeric_limits<int64_t>::max();

// Worker flags the agent sets from the node, not from the spec.
inline constexpr int kMaxThreads = 4096;  // per rank

// Spec fields the coordinator alone reads.
inline constexpr int kMaxNodes = 4096;
inline constexpr int kMaxRanksPerNode = 64;
inline constexpr int kMaxRepetitions = 100;
inline constexpr int kMaxRetries = 10;
inline constexpr int64_t kMaxTimeLimitSeconds = 30 * 24 * 3600;  // 30 days
inline constexpr int32_t kMaxPriority = 1'000'000;
inline constexpr int kMaxConstraints = 16;
inline constexpr size_t kMaxSpecBytes = 64 * 1024;

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_LIMITS_H_
