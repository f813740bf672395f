#include "worker/metrics/timing.h"

#include <gtest/gtest.h>

namespace hpcai500::worker {
namespace {

TEST(EpochClock, StepTimersBookTheirSpanToTheirPhase) {
  double now = 100;
  EpochClock clock([&] { return now; });
  {
    StepTimer input(&clock, Phase::kInputWait);
    now += 0.5;
  }
  {
    StepTimer compute(&clock, Phase::kCompute);
    now += 2;
    EXPECT_DOUBLE_EQ(compute.Stop(), 2);
    now += 7;  // after Stop: booked nowhere
    EXPECT_DOUBLE_EQ(compute.Stop(), 0);
  }
  {
    StepTimer compute(&clock, Phase::kCompute);
    now += 1;
  }
  EXPECT_DOUBLE_EQ(clock.seconds(Phase::kInputWait), 0.5);
  EXPECT_DOUBLE_EQ(clock.seconds(Phase::kCompute), 3);
  EXPECT_DOUBLE_EQ(clock.seconds(Phase::kEval), 0);
  EXPECT_DOUBLE_EQ(clock.elapsed(), 10.5);
}

TEST(EpochClock, ResetStartsANewEpoch) {
  double now = 0;
  EpochClock clock([&] { return now; });
  clock.Add(Phase::kEval, 4);
  now = 5;
  clock.Reset();
  now = 6;
  EXPECT_DOUBLE_EQ(clock.seconds(Phase::kEval), 0);
  EXPECT_DOUBLE_EQ(clock.elapsed(), 1);
}

TEST(EpochClock, RealClockMovesForward) {
  EpochClock clock;
  const double a = clock.now();
  EXPECT_GE(clock.now(), a);
  EXPECT_GE(clock.elapsed(), 0);
}

}  // namespace
}  // namespace hpcai500::worker
