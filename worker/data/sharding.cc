#include "worker/data/sharding.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace hpcai500::worker {

namespace {

// Every world_size-th entry of `order` from position `rank`.
std::vector<int64_t> TakeStrided(const std::vector<int64_t>& order, int rank,
                                 int world_size) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<int64_t> shard;
  shard.reserve(n / world_size + 1);
  for (int64_t i = rank; i < n; i += world_size) shard.push_back(order[i]);
  return shard;
}

std::vector<int64_t> IndexOrder(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace

std::vector<int64_t> ShardIndices(int64_t n, uint64_t seed, int epoch, int rank,
                                  int world_size) {
  std::vector<int64_t> order = IndexOrder(n);
  std::mt19937_64 rng(seed + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  return TakeStrided(order, rank, world_size);
}

std::vector<int64_t> EvalShardIndices(int64_t n, int rank, int world_size) {
  return TakeStrided(IndexOrder(n), rank, world_size);
}

int64_t ShardSize(int64_t n, int rank, int world_size) {
  return n / world_size + (rank < n % world_size ? 1 : 0);
}

int64_t StepsPerEpoch(int64_t n, int world_size, int64_t batch_size,
                      int64_t max_steps) {
  const int64_t largest_shard = (n + world_size - 1) / world_size;
  int64_t steps = (largest_shard + batch_size - 1) / batch_size;
  if (max_steps > 0) steps = std::min(steps, max_steps);
  return steps;
}

int64_t SamplesPerEpoch(int64_t n, int world_size, int64_t batch_size,
                        int64_t steps) {
  int64_t total = 0;
  for (int r = 0; r < world_size; ++r) {
    total += std::min(ShardSize(n, r, world_size), steps * batch_size);
  }
  return total;
}

}  // namespace hpcai500::worker
