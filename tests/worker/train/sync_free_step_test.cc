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

#include "methodology/registry.h"
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

// A classifier small enough for many steps: conv, BatchNorm (unless
// `batch_norm` is false: a masked row's image then changes nothing), ReLU,
// pool, linear; the classification loss, masking included.
class TinyTask final : public TrainingOnlyTask {
 public:
  explicit TinyTask(bool batch_norm = true) {
    torch::manual_seed(7);  // both twins start from the same weights
    net_ = torch::nn::Sequential(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)));
    if (batch_norm) net_->push_back(torch::nn::BatchNorm2d(8));
    net_->push_back(torch::nn::ReLU());
    net_->push_back(torch::nn::AdaptiveAvgPool2d(1));
    net_->push_back(torch::nn::Flatten());
    net_->push_back(torch::nn::Linear(8, 5));
  }
  torch::nn::Module& module() override { return *net_; }
  bool channels_last() const override { return false; }
  torch::Tensor Loss(const Batch& batch, FlopCount* forward) override {
    forward->flops = kForwardFlops;
    return CrossEntropyLoss(net_->forward(batch.images), batch.labels,
                            /*label_smoothing=*/0.1, batch.masked) *
           loss_weight;
  }

  // What the loss is multiplied by: local / global samples stands in for
  // the reducer's weighting in a test without ranks.
  double loss_weight = 1.0;

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
                 bool scaled = false, bool batch_norm = true)
      : plain(batch_norm),
        fast(batch_norm),
        plain_optimizer(
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

// The static inputs of BatchOf's batches.
constexpr StaticBatchShape kTinyShape{4, {3, 6, 6}, /*channels_last=*/false};

TEST(CudaGraphStep, OnTheCpuEveryStepRunsEagerlyAndMatchesThePlainStep) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  CudaGraphStep graph(&fast, /*reducer=*/nullptr, torch::kCPU, kTinyShape,
                      /*warmup_steps=*/1);
  for (int step = 0; step < 4; ++step) {
    twins.PlainStep(step);
    fast.SetLearningRate(LearningRateOf(step));
    EXPECT_EQ(graph.Run(BatchOf(step), 4, 4).flops, kForwardFlops);
  }
  EXPECT_FALSE(graph.captured());
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
}

// A rank that dropped corrupt samples replays the full step with those rows
// masked: each of its samples weighs what it does in the eager step of its
// short batch weighted as one of the full global count (the reducer's
// local / global, which a test without ranks puts in the loss), and so do
// the parameters and the loss sum (a model without BatchNorm, whose batch
// statistics would see the masked rows' stale images).
TEST(CudaGraphStep, AShortBatchReplaysMaskedAsTheEagerStepWeightedAsFull) {
  Twins twins("sgd", {}, /*scaled=*/false, /*batch_norm=*/false);
  SyncFreeStep eager(StepParts{&twins.plain, twins.plain_optimizer.get(),
                               &twins.plain_scaler, nullptr, Precision::kFp32,
                               torch::kCPU});
  SyncFreeStep fast(twins.FastParts());
  CudaGraphStep graph(&fast, /*reducer=*/nullptr, torch::kCPU, kTinyShape);
  const std::vector<int64_t> locals = {4, 3, 1, 2, 4};
  double eager_loss = 0;
  for (int step = 0; step < 5; ++step) {
    const int64_t local = locals[step];
    const Batch batch = BatchOf(step);
    const Batch short_batch{
        batch.images.narrow(0, 0, local), batch.labels.narrow(0, 0, local), {}};
    eager.SetLearningRate(LearningRateOf(step));
    fast.SetLearningRate(LearningRateOf(step));
    twins.plain.loss_weight = static_cast<double>(local) / 4;
    eager.Step(short_batch, local, /*global=*/4);
    eager_loss += eager.TakeTotals().loss_sum / twins.plain.loss_weight;
    graph.Run(short_batch, local, /*global=*/4);
  }
  ExpectSameParameters(twins.plain.module(), twins.fast.module());
  EXPECT_NEAR(fast.TakeTotals().loss_sum, eager_loss, 1e-5 * eager_loss);
}

// A rank whose every sample of a full step was corrupt replays too, every
// row masked: no loss and a zero gradient of its own (the all-reduce then
// brings the others').
TEST(CudaGraphStep, ARankWithoutSamplesReplaysWithEveryRowMasked) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  CudaGraphStep graph(&fast, /*reducer=*/nullptr, torch::kCPU, kTinyShape);
  fast.SetLearningRate(0.0);
  graph.Run(BatchOf(0), 4, 4);
  EXPECT_GT(fast.TakeTotals().loss_sum, 0.0);
  graph.Run(Batch{}, 0, 4);
  EXPECT_EQ(fast.TakeTotals().loss_sum, 0.0);
  for (const torch::Tensor& p : twins.fast.module().parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().max().item<double>(), 0.0);
  }
}

TEST(CudaGraphStep, RefusesABatchOfOtherSamplesOrMoreOfThem) {
  Twins twins("sgd");
  SyncFreeStep fast(twins.FastParts());
  CudaGraphStep graph(&fast, /*reducer=*/nullptr, torch::kCPU, kTinyShape);
  const Batch wide{torch::randn({4, 3, 7, 6}), torch::randint(5, {4}), {}};
  EXPECT_THROW(graph.Run(wide, 4, 4), std::invalid_argument);
  const Batch five{torch::randn({5, 3, 6, 6}), torch::randint(5, {5}), {}};
  EXPECT_THROW(graph.Run(five, 5, 5), std::invalid_argument);
  EXPECT_THROW(CudaGraphStep(&fast, nullptr, torch::kCPU,
                             StaticBatchShape{0, {3, 6, 6}, false}),
               std::invalid_argument);
}

TEST(CrossEntropyLoss, MaskedRowsAddNothingAndTheRestDivideByTheWholeBatch) {
  torch::manual_seed(3);
  const torch::Tensor logits = torch::randn({4, 5});
  const torch::Tensor labels = torch::tensor({1, 4, 0, 2});
  // Nothing masked: the plain mean (up to the order of the sum).
  EXPECT_TRUE(torch::allclose(CrossEntropyLoss(logits, labels, 0.1, true),
                              CrossEntropyLoss(logits, labels, 0.1, false)));
  // Two rows masked: the other two's mean, times 2 / 4.
  const torch::Tensor masked =
      torch::tensor(std::vector<int64_t>{1, kIgnoredLabel, 0, kIgnoredLabel});
  const torch::Tensor kept =
      CrossEntropyLoss(logits.index_select(0, torch::tensor({0, 2})),
                       torch::tensor({1, 0}), 0.1, false);
  EXPECT_TRUE(
      torch::allclose(CrossEntropyLoss(logits, masked, 0.1, true), kept * 0.5));
  // All masked: zero, not the NaN of a mean over no rows.
  EXPECT_EQ(CrossEntropyLoss(logits, torch::full({4}, kIgnoredLabel), 0.1, true)
                .item<double>(),
            0.0);
}

TEST(SyncFreeStep, FullBatchStepsAreTheSmallestShardsWholeBatches) {
  // 1000 samples over 3 ranks: shards of 334, 333, 333.
  EXPECT_EQ(FullBatchSteps(1000, 3, 100, 4), 3);
  EXPECT_EQ(FullBatchSteps(1000, 3, 111, 4), 3);  // 333 = 3 x 111
  EXPECT_EQ(FullBatchSteps(1000, 3, 112, 4), 2);
  EXPECT_EQ(FullBatchSteps(1000, 3, 100, 2), 2);  // the epoch's cap
  EXPECT_EQ(FullBatchSteps(64, 1, 16, 10), 4);
  EXPECT_EQ(FullBatchSteps(10, 1, 16, 10), 0);
}

// Every rank makes the same choice on the full steps whatever it holds, so
// that no rank runs eagerly (or agrees a count) while another replays.
TEST(SyncFreeStep, EveryRankTakesTheFullStepsAlikeWhateverItsSamples) {
  for (int64_t local : {16, 15, 1, 0}) {
    EXPECT_EQ(KindOfStep(0, 3, local), StepKind::kFull) << local;
    EXPECT_EQ(KindOfStep(2, 3, local), StepKind::kFull) << local;
  }
  EXPECT_EQ(KindOfStep(3, 3, 16), StepKind::kCounted);
  EXPECT_EQ(KindOfStep(3, 3, 4), StepKind::kCounted);
  EXPECT_EQ(KindOfStep(3, 3, 0), StepKind::kNoSamples);
  EXPECT_EQ(KindOfStep(0, 0, 4), StepKind::kCounted);
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
