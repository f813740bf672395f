#include "worker/data/sharding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hpcai500::worker {
namespace {

TEST(EvalShardIndices, RanksTakeEveryWorldSizeThIndexInOrder) {
  EXPECT_EQ(EvalShardIndices(7, /*rank=*/1, /*world_size=*/3),
            (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(EvalShardIndices(7, 0, 3), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_TRUE(EvalShardIndices(2, 2, 3).empty());
}

TEST(ShardSize, MatchesTheShardsAndSumsToN) {
  for (int world = 1; world <= 4; ++world) {
    int64_t total = 0;
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(ShardSize(10, rank, world),
                static_cast<int64_t>(EvalShardIndices(10, rank, world).size()));
      total += ShardSize(10, rank, world);
    }
    EXPECT_EQ(total, 10);
  }
}

TEST(StepsPerEpoch, CoversTheLargestShardAndHonoursTheCap) {
  // 10 samples over 3 ranks: shards of 4, 3, 3; batches of 2 -> 2 steps.
  EXPECT_EQ(StepsPerEpoch(10, 3, 2, /*max_steps=*/0), 2);
  EXPECT_EQ(StepsPerEpoch(10, 3, 3, 0), 2);
  EXPECT_EQ(StepsPerEpoch(10, 3, 2, /*max_steps=*/1), 1);
  EXPECT_EQ(StepsPerEpoch(10, 3, 2, /*max_steps=*/5), 2);
}

TEST(SamplesPerEpoch, CountsWhatTheStepsOfEveryRankTake) {
  EXPECT_EQ(SamplesPerEpoch(10, 3, 2, /*steps=*/2), 10);
  EXPECT_EQ(SamplesPerEpoch(10, 3, 2, /*steps=*/1), 6);
}

}  // namespace
}  // namespace hpcai500::worker
