// The sync-free step (--cuda-graph's step, worker/train/sync_free_step.h) on
// the CPU, held to the trainer's plain step: device learning rate, fused SGD
// and LARS, the loss summed on the device, the loss scaler's skip decision
// on the device; and the runs --cuda-graph refuses.
//
// Tolerance: the fused SGD kernel computes p - lr * buf with one rounding
// less than SGD's add_(buf, -lr) on some elements, and LARS's multi-tensor
// norms sum in another order, so parameters agree to within a few float32
// ulps a step: rtol 1e-5, atol 1e-6 after 5 steps (observed: 1 ulp).
#include "worker/train/sync_free_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common/registry.h"
#include "worker/flags.h"
#include "worker/train/cuda_graph_step.h"
#include "worker/train/optimizer.h"
#include "worker/train/precision.h"
#include "worker/train/run.h"
#include "worker/train/task.h"

namespace hpcai500::worker {
namespace {

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;
constexpr double kForwardFlops = 7;  // what TinyTask reports

// A classifier small enough for many steps: conv, BatchNorm, ReLU, pool,
// linear.
class TinyTask final : public TrainingOnlyTask {
 public:
  TinyTask() {
    torch::manual_seed(7);  // both twins start from the same weights
    net_ = torch::nn::Sequential(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)),
        torch::nn::BatchNorm2d(8), torch::nn::ReLU(),
        torch::nn::AdaptiveAvgPool2d(1), torch::nn::Flatten(),
        torch::nn::Linear(8, 5));
  }
  torch::nn::Module& module() override { return *net_; }
  bool channels_last() const override { return false; }
  torch::Tensor Loss(const Batch& batch, FlopCount* forward) override {
    forward->flops = kForwardFlops;
    return torch::nn::functional::cross_entropy(net_->forward(batch.images),
                                                batch.labels);
  }

 private:
  torch::nn::Sequential net_{nullptr};
};

ConfigInfo Recipe(const std::string& optimizer) {
  ConfigInfo config;
  config.model = "tiny";  // not in the zoo: biases and BatchNorm not decayed
  config.optimizer = optimizer;
  config.momentum = 0.9;
  config.weight_decay = 5e-4;
  return config;
}

Batch BatchOf(int step) {
  torch::manual_seed(100 + step);
  return {torch::randn({4, 3, 6, 6}), torch::randint(5, {4}), {}};
}

double LearningRateOf(int step) { return 0.05 * (step + 1); }

// One model trained by the trainer's plain step, one by the sync-free step.
struct Twins {
  explicit Twins(const std::string& optimizer, LossScaler::Options scaling = {},
                 bool scaled = false)
      : plain_optimizer(
            MakeOptimizer(Recipe(optimizer), plain.module().parameters(), 0.1)),
        fast_optimizer(
            MakeOptimizer(Recipe(optimizer), fast.module().parameters(), 0.1)),
        plain_scaler(scaled, scaling),
        fast_scaler(scaled, scaling) {}

  // The plain step of trainer.cc, without the reducer; returns loss * 4.
  double PlainStep(int step) {
    SetLearningRate(*plain_optimizer, LearningRateOf(step));
    plain_optimizer->zero_grad();
    const Batch batch = BatchOf(step);
    FlopCount forward;
    torch::Tensor loss = plain.Loss(batch, &forward);
    plain_scaler.Scale(loss).backward();
    plain_scaler.Step(*plain_optimizer, plain.module().parameters());
    return loss.item<double>() * batch.size();
  }

  StepParts FastParts() {
    return {&fast,
            fast_optimizer.get(),
            &fast_scaler,
            /*reducer=*/nullptr,
            Precision::kFp32,
            torch::kCPU};
  }

  TinyTask plain;
  TinyTask fast;
  std::unique_ptr<torch::optim::SGD> plain_optimizer;
  std::unique_ptr<torch::optim::SGD> fast_optimizer;
  LossScaler plain_scaler;
  LossScaler fast_scaler;
};

void ExpectSameParameters(torch::nn::Module& a, torch::nn::Module& b) {
  const std::vector<torch::Tensor> pa = a.parameters();
  const std::vector<torch::Tensor> pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::allclose(pa[i], pb[i], kRtol, kAtol))
        << "parameter " << i << " differs by "
        << (pa[i] - pb[i]).abs().max().item<double>();
  }
}

TEST(SyncFreeStep, SgdWithChangingLearningRateMatchesThePlainStep) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  double plain_loss = 0;
  for (int step = 0; step < 5; ++step) {
    plain_loss += twins.PlainStep(step);
    fast.SetLearningRate(LearningRateOf(step));
    const FlopCount forward = fast.Step(BatchOf(step), 4, std::nullopt);
    EXPECT_EQ(forward.flops, kForwardFlops);
    if (step == 0) {
      // Same weights, same batch: the loss sum is the plain one, bit for bit.
      const SyncFreeTotals first = fast.TakeTotals();
      EXPECT_EQ(first.loss_sum, plain_loss);
      plain_loss = 0;
    }
  }
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
  const SyncFreeTotals rest = fast.TakeTotals();
  EXPECT_NEAR(rest.loss_sum, plain_loss, 1e-5 * std::abs(plain_loss));
  EXPECT_EQ(rest.skipped_steps, 0);
  // Taking the totals zeroes them.
  EXPECT_EQ(fast.TakeTotals().loss_sum, 0.0);
}

TEST(SyncFreeStep, TheLearningRateTensorIsWhatTheStepUses) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  const torch::Tensor before = twins.fast.module().parameters()[0].clone();
  fast.SetLearningRate(0.0);
  fast.Step(BatchOf(0), 4, std::nullopt);
  EXPECT_TRUE(torch::equal(before, twins.fast.module().parameters()[0]));
  fast.SetLearningRate(0.1);
  fast.Step(BatchOf(1), 4, std::nullopt);
  EXPECT_FALSE(torch::equal(before, twins.fast.module().parameters()[0]));
}

TEST(SyncFreeStep, LarsMatchesThePlainStep) {
  Twins twins("lars");
  ASSERT_TRUE(LarsOf(*twins.fast_optimizer).has_value());
  SyncFreeStep fast(twins.FastParts());
  for (int step = 0; step < 5; ++step) {
    twins.PlainStep(step);
    fast.SetLearningRate(LearningRateOf(step));
    fast.Step(BatchOf(step), 4, std::nullopt);
  }
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
}

// Gradients as backward would leave them under `scale`, one of them inf on
// `overflow`.
void SetScaledGradients(torch::nn::Module& module, int step, double scale,
                        bool overflow) {
  torch::manual_seed(200 + step);
  for (torch::Tensor& p : module.parameters()) {
    p.mutable_grad() = torch::randn_like(p) * scale;
  }
  if (overflow) {
    module.parameters()[1].mutable_grad()[0] =
        std::numeric_limits<float>::infinity();
  }
}

TEST(SyncFreeStep, AnInfGradientSkipsExactlyThatStepAndBacksOffTheScale) {
  LossScaler::Options scaling;
  scaling.growth_interval = 2;  // grows on the fourth step below
  Twins twins("sgd", scaling, /*scaled=*/true);
  SyncFreeStep fast(twins.FastParts());
  const std::vector<bool> overflows = {false, true, false, false};
  torch::Tensor after_first;
  for (int step = 0; step < 4; ++step) {
    // Both gradients scaled by the plain scale before the step (the device
    // one is the same as long as they agree).
    const double scale = twins.plain_scaler.scale();
    SetLearningRate(*twins.plain_optimizer, LearningRateOf(step));
    SetScaledGradients(twins.plain.module(), step, scale, overflows[step]);
    EXPECT_EQ(twins.plain_scaler.Step(*twins.plain_optimizer,
                                      twins.plain.module().parameters()),
              !overflows[step]);
    fast.SetLearningRate(LearningRateOf(step));
    SetScaledGradients(twins.fast.module(), step, scale, overflows[step]);
    fast.OptimizerStep();
    if (step == 0) after_first = twins.fast.module().parameters()[0].clone();
    if (step == 1) {
      EXPECT_TRUE(
          torch::equal(after_first, twins.fast.module().parameters()[0]))
          << "the overflowing step changed a parameter";
    }
  }
  const SyncFreeTotals totals = fast.TakeTotals();
  EXPECT_EQ(totals.skipped_steps, 1);
  // 2^16, halved by the overflow, doubled after two finite steps.
  EXPECT_EQ(twins.plain_scaler.scale(), 65536.0);
  EXPECT_EQ(twins.fast_scaler.scale(), twins.plain_scaler.scale());
  EXPECT_EQ(twins.fast_scaler.state().growth_tracker,
            twins.plain_scaler.state().growth_tracker);
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
}

TEST(SyncFreeStep, TheScaleIsReadBackOnlyWhenTheTotalsAreTaken) {
  Twins twins("sgd", {}, /*scaled=*/true);
  SyncFreeStep fast(twins.FastParts());
  SetScaledGradients(twins.fast.module(), 0, 65536.0, /*overflow=*/true);
  fast.OptimizerStep();
  EXPECT_EQ(twins.fast_scaler.scale(), 65536.0);
  EXPECT_EQ(fast.TakeTotals().skipped_steps, 1);
  EXPECT_EQ(twins.fast_scaler.scale(), 32768.0);
}

TEST(CudaGraphStep, OnTheCpuEveryStepRunsEagerlyAndMatchesThePlainStep) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  CudaGraphStep graph(&fast, /*reducer=*/nullptr, torch::kCPU,
                      /*warmup_steps=*/1);
  for (int step = 0; step < 4; ++step) {
    twins.PlainStep(step);
    fast.SetLearningRate(LearningRateOf(step));
    EXPECT_EQ(graph.Run(BatchOf(step), 4, 4).flops, kForwardFlops);
  }
  EXPECT_FALSE(graph.captured());
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
}

TEST(CudaGraphStep, FullBatchStepsAreTheSmallestShardsWholeBatches) {
  // 1000 samples over 3 ranks: shards of 334, 333, 333.
  EXPECT_EQ(FullBatchSteps(1000, 3, 100, 4), 3);
  EXPECT_EQ(FullBatchSteps(1000, 3, 111, 4), 3);  // 333 = 3 x 111
  EXPECT_EQ(FullBatchSteps(1000, 3, 112, 4), 2);
  EXPECT_EQ(FullBatchSteps(1000, 3, 100, 2), 2);  // the epoch's cap
  EXPECT_EQ(FullBatchSteps(64, 1, 16, 10), 4);
  EXPECT_EQ(FullBatchSteps(10, 1, 16, 10), 0);
}

TEST(CudaGraphStep, OnlyFullBatchesOfFullStepsReplay) {
  EXPECT_EQ(KindOfCapturedStep(0, 3, 16, 16), CapturedStepKind::kReplay);
  EXPECT_EQ(KindOfCapturedStep(2, 3, 16, 16), CapturedStepKind::kReplay);
  EXPECT_EQ(KindOfCapturedStep(2, 3, 15, 16),
            CapturedStepKind::kEagerAssumeFull);
  EXPECT_EQ(KindOfCapturedStep(3, 3, 16, 16), CapturedStepKind::kEagerCounted);
  EXPECT_EQ(KindOfCapturedStep(3, 3, 4, 16), CapturedStepKind::kEagerCounted);
  EXPECT_EQ(KindOfCapturedStep(3, 3, 0, 16), CapturedStepKind::kNoSamples);
  EXPECT_EQ(KindOfCapturedStep(1, 3, 0, 16), CapturedStepKind::kNoSamples);
}

WorkerOptions OptionsOf(std::vector<std::string> more) {
  std::vector<std::string> args = {"--workload",       "image_classification",
                                   "--config",         "fashion_mnist_smoke",
                                   "--device",         "cuda",
                                   "--cuda-graph=true"};
  args.insert(args.end(), more.begin(), more.end());
  WorkerOptions options;
  std::string error;
  EXPECT_EQ(ParseWorkerFlags(
                args, Registry::Builtin(),
                [](const char*) -> std::optional<std::string> {
                  return std::nullopt;
                },
                /*hardware_threads=*/2, &options, &error),
            ParseOutcome::kRun)
      << error;
  return options;
}

TEST(CheckCudaGraph, AcceptsAClassifierOnOneRankOrOverNccl) {
  EXPECT_EQ(CheckCudaGraph(OptionsOf({})), "");
  WorkerOptions two_ranks = OptionsOf({"--dist-backend", "nccl"});
  two_ranks.world_size = 2;
  EXPECT_EQ(CheckCudaGraph(two_ranks), "");
  // Off: nothing to check.
  WorkerOptions off = OptionsOf({"--compression", "powersgd"});
  off.args.cuda_graph = false;
  EXPECT_EQ(CheckCudaGraph(off), "");
}

TEST(CheckCudaGraph, TheWorkerRefusesGlooBetweenRanksNamingTheFlag) {
  WorkerOptions options = OptionsOf({"--dist-backend", "gloo"});
  options.world_size = 2;
  // Before the device check, so a machine without a GPU says it too.
  const std::string problem = CheckRunnable(options);
  EXPECT_NE(problem.find("--cuda-graph"), std::string::npos) << problem;
  EXPECT_NE(problem.find("Gloo"), std::string::npos) << problem;
}

TEST(CheckCudaGraph, TheWorkerRefusesPowerSgd) {
  const std::string problem =
      CheckRunnable(OptionsOf({"--compression", "powersgd"}));
  EXPECT_NE(problem.find("--cuda-graph"), std::string::npos) << problem;
  EXPECT_NE(problem.find("powersgd"), std::string::npos) << problem;
}

TEST(CheckCudaGraph, RefusesADetector) {
  WorkerOptions options = OptionsOf({});
  options.config.model = "faster_rcnn_resnet18";
  const std::string problem = CheckCudaGraph(options);
  EXPECT_NE(problem.find("--cuda-graph"), std::string::npos) << problem;
  EXPECT_NE(problem.find("faster_rcnn_resnet18"), std::string::npos) << problem;
}

}  // namespace
}  // namespace hpcai500::worker
