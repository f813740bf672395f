// The one rule that shards a data set over the ranks of a run: rank r holds
// every world_size-th sample from position r, of a per-epoch permutation for
// training and of the index order for evaluation. Every rank takes the same
// number of steps (the largest shard's), so their collectives pair up.
//
// Thread-safe: pure functions. No LibTorch here.
#ifndef HPCAI500_WORKER_DATA_SHARDING_H_
#define HPCAI500_WORKER_DATA_SHARDING_H_

#include <cstdint>
#include <vector>

namespace hpcai500::worker {

// This rank's training sample indices for `epoch`: a permutation of [0, n)
// drawn from std::mt19937_64(seed + epoch) (identical on every rank), every
// world_size-th entry from position `rank`. Shards differ by at most one
// sample and together hold every sample once.
std::vector<int64_t> ShardIndices(int64_t n, uint64_t seed, int epoch, int rank,
                                  int world_size);

// This rank's evaluation sample indices: rank, rank + world_size, ... < n,
// in order.
std::vector<int64_t> EvalShardIndices(int64_t n, int rank, int world_size);

// How many of `n` samples rank `rank` holds: n / world_size, plus one for
// the first n % world_size ranks.
int64_t ShardSize(int64_t n, int rank, int world_size);

// Steps of an epoch over `n` samples: enough batches of `batch_size` for
// the largest shard, capped at `max_steps` when that is > 0.
int64_t StepsPerEpoch(int64_t n, int world_size, int64_t batch_size,
                      int64_t max_steps);

// Samples all ranks train in an epoch of `steps` batches of `batch_size`.
int64_t SamplesPerEpoch(int64_t n, int world_size, int64_t batch_size,
                        int64_t steps);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_SHARDING_H_
