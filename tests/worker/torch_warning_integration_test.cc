// No LibTorch warning may end a worker (issue 21: every bf16/fp16 step on a
// GPU once died in LibTorch's warning path). The real worker with
// HPCAI500_TEST_TORCH_WARN=1 (worker/train/test_warnings.h) warns inside the
// bf16 autocast scope of its first steps, from inside LibTorch and from its
// own TORCH_WARN, and must still finish. On the CPU here; the same case on
// CUDA is in gpu_test.cc.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"

namespace {

using hpcai500::testing::ReadEvents;
using hpcai500::testing::ReadFile;
using hpcai500::testing::RunWorkerAlone;
using hpcai500::testing::ScratchDir;
using hpcai500::testing::WithKey;
using nlohmann::json;

using ::hpcai500::testing::kWorker;

TEST(TorchWarnings, Bf16RunOnCpuWarnsInsideLibTorchAndStillSucceeds) {
  ScratchDir scratch("torch_warning_it");
  const std::string& dir = scratch.path();
  const int code = RunWorkerAlone(
      kWorker,
      {"--workload", "image_classification", "--config", "cifar10", "--data",
       "synthetic", "--precision", "bf16", "--batch-size", "8", "--epochs", "2",
       "--steps-per-epoch", "3", "--events-file", dir + "/events"},
      dir, std::chrono::minutes(3), {"HPCAI500_TEST_TORCH_WARN=1"});
  const std::string err = ReadFile(dir + "/stderr");
  EXPECT_EQ(code, 0) << err;
  const std::vector<json> events = ReadEvents(dir + "/events");
  const std::vector<json> stops = WithKey(events, "run_stop");
  ASSERT_EQ(stops.size(), 1u) << err;
  EXPECT_EQ(stops[0]["metadata"]["status"], "success") << stops[0].dump();
  EXPECT_EQ(WithKey(events, "epoch_stop").size(), 2u);
  // The warnings were raised, so the run went on through them: the worker's
  // own, twice per epoch, and LibTorch's from inside its operators.
  for (const std::string said :
       {"hpcai500 test warning: epoch 1 step 0 on cpu",
        "hpcai500 test warning: epoch 1 step 1 on cpu",
        "hpcai500 test warning: epoch 2 step 1 on cpu",
        "was resized since it had shape [2]", "torch.meshgrid"}) {
    EXPECT_NE(err.find(said), std::string::npos) << said << " in:\n" << err;
  }
  EXPECT_EQ(err.find("epoch 1 step 2"), std::string::npos)
      << "only the first two steps of an epoch warn";
}

TEST(TorchWarnings, AnythingButZeroOrOneEndsTheRunNamingTheVariable) {
  ScratchDir scratch("torch_warning_it_bad");
  const std::string& dir = scratch.path();
  const int code = RunWorkerAlone(
      kWorker,
      {"--workload", "image_classification", "--config", "cifar10", "--data",
       "synthetic", "--batch-size", "2", "--epochs", "1", "--steps-per-epoch",
       "1", "--events-file", dir + "/events"},
      dir, std::chrono::minutes(2), {"HPCAI500_TEST_TORCH_WARN=yes"});
  EXPECT_EQ(code, 1);
  const std::vector<json> stops =
      WithKey(ReadEvents(dir + "/events"), "run_stop");
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0]["metadata"]["status"], "aborted");
  EXPECT_NE(stops[0]["metadata"]
                .value("reason", "")
                .find("HPCAI500_TEST_TORCH_WARN: 'yes' is not 0 or 1"),
            std::string::npos)
      << stops[0].dump();
}

}  // namespace
