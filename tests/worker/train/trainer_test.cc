// The trainer's choice of a rank's CUDA device (worker/train/trainer.h),
// which needs no GPU: the rank's own GPU whether the launcher gave it
// exactly one or let it see the node's every GPU, and a clear error where
// it sees too few.
#include "worker/train/trainer.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace hpcai500::worker {
namespace {

TEST(CudaDeviceFor, ARankGivenExactlyOneGpuTakesDeviceZero) {
  // The agent's launch: CUDA_VISIBLE_DEVICES names the rank's own GPU.
  EXPECT_EQ(CudaDeviceFor(/*local_rank=*/0, /*visible_devices=*/1), 0);
  EXPECT_EQ(CudaDeviceFor(/*local_rank=*/5, /*visible_devices=*/1), 0);
}

TEST(CudaDeviceFor, ARankSeeingEveryGpuTakesItsLocalRanks) {
  // mpirun and srun launches: every rank sees the node's GPUs.
  EXPECT_EQ(CudaDeviceFor(0, 8), 0);
  EXPECT_EQ(CudaDeviceFor(1, 8), 1);
  EXPECT_EQ(CudaDeviceFor(7, 8), 7);
}

TEST(CudaDeviceFor, TooFewGpusIsAnErrorNamingTheCounts) {
  try {
    CudaDeviceFor(2, 2);
    FAIL() << "local rank 2 of 2 GPUs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("local rank 2 but 2 CUDA devices"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CudaDeviceFor(0, 0), std::invalid_argument);
  EXPECT_THROW(CudaDeviceFor(-1, 4), std::invalid_argument);
}

}  // namespace
}  // namespace hpcai500::worker
