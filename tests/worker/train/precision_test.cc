// Loss scaling, channels-last and the determinism helpers, on CPU tensors.
#include "worker/train/precision.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <torch/torch.h>

#include <cstdlib>
#include <limits>
#include <vector>

namespace hpcai500::worker {
namespace {

// One parameter whose gradient the test sets by hand, and plain SGD.
struct OneParameter {
  OneParameter()
      : weight(torch::ones({3}).set_requires_grad(true)),
        optimizer(std::vector<torch::Tensor>{weight},
                  torch::optim::SGDOptions(/*lr=*/1.0)) {}
  void SetGradient(std::vector<float> values) {
    weight.mutable_grad() = torch::tensor(values);
  }
  torch::Tensor weight;
  torch::optim::SGD optimizer;
};

TEST(LossScaler, StartsAtTwoToTheSixteenAndScalesTheLoss) {
  LossScaler scaler(/*enabled=*/true);
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.Scale(torch::tensor(0.5f)).item<float>(), 32768.0f);
}

TEST(LossScaler, SkipsTheStepWithAnInjectedInfAndBacksOff) {
  LossScaler scaler(/*enabled=*/true);
  OneParameter p;
  p.SetGradient({1.0f, std::numeric_limits<float>::infinity(), 2.0f});
  EXPECT_FALSE(scaler.Step(p.optimizer, {p.weight}));
  EXPECT_TRUE(torch::equal(p.weight, torch::ones({3})));  // not stepped
  EXPECT_EQ(scaler.scale(), 32768.0);

  p.SetGradient({std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f});
  EXPECT_FALSE(scaler.Step(p.optimizer, {p.weight}));
  EXPECT_TRUE(torch::equal(p.weight, torch::ones({3})));
  EXPECT_EQ(scaler.scale(), 16384.0);
}

TEST(LossScaler, StepsWithUnscaledGradientsWhenFinite) {
  LossScaler scaler(/*enabled=*/true);
  OneParameter p;
  // Gradients as a backward of the scaled loss leaves them.
  p.SetGradient({65536.0f, 2 * 65536.0f, -65536.0f});
  EXPECT_TRUE(scaler.Step(p.optimizer, {p.weight}));
  // w - lr * g / scale, exactly.
  EXPECT_TRUE(torch::equal(p.weight, torch::tensor({0.0f, -1.0f, 2.0f})));
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.state().growth_tracker, 1);
}

TEST(LossScaler, GrowsAfterGrowthIntervalFiniteStepsInARow) {
  LossScaler::Options options;
  options.growth_interval = 3;
  LossScaler scaler(/*enabled=*/true, options);
  scaler.Update(/*found_non_finite=*/false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 131072.0);
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  // A non-finite step restarts the count.
  scaler.Update(false);
  scaler.Update(false);
  scaler.Update(true);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.Update(false);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(LossScaler, DefaultGrowthIntervalIsTwoThousand) {
  LossScaler scaler(/*enabled=*/true);
  for (int i = 0; i < 1999; ++i) scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 65536.0);
  scaler.Update(false);
  EXPECT_EQ(scaler.scale(), 131072.0);
}

TEST(LossScaler, DisabledForFp32AndBf16NeverSkipsAndKeepsScaleOne) {
  for (Precision precision : {Precision::kFp32, Precision::kBf16}) {
    LossScaler scaler = LossScaler::ForPrecision(precision);
    EXPECT_FALSE(scaler.enabled()) << Name(precision);
    EXPECT_EQ(scaler.scale(), 1.0);
    OneParameter p;
    p.SetGradient({std::numeric_limits<float>::infinity(), 1.0f, 1.0f});
    EXPECT_TRUE(scaler.Step(p.optimizer, {p.weight})) << Name(precision);
    EXPECT_EQ(p.weight[1].item<float>(), 0.0f);  // stepped, unscaled
    EXPECT_EQ(scaler.scale(), 1.0);
  }
  EXPECT_TRUE(LossScaler::ForPrecision(Precision::kFp16).enabled());
}

TEST(LossScaler, RestoreRefusesANonPositiveScale) {
  LossScaler scaler(/*enabled=*/true);
  EXPECT_THROW(scaler.Restore({0.0, 0}), std::invalid_argument);
  EXPECT_THROW(scaler.Restore({std::numeric_limits<double>::infinity(), 0}),
               std::invalid_argument);
  scaler.Restore({1024.0, 7});
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_EQ(scaler.state().growth_tracker, 7);
}

TEST(Autocast, Bf16OnCpuRunsMatmulsInBf16AndEndsWithTheScope) {
  const torch::Tensor a = torch::randn({4, 4});
  {
    AutocastScope autocast(Precision::kBf16, torch::Device(torch::kCPU));
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat32);
  {
    AutocastScope autocast(Precision::kFp32, torch::Device(torch::kCPU));
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat32);
  }
}

TEST(Autocast, Fp16OnCpuIsRefusedByName) {
  try {
    AutocastScope autocast(Precision::kFp16, torch::Device(torch::kCPU));
    FAIL() << "fp16 on CPU was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fp16"), std::string::npos);
  }
}

TEST(ChannelsLast, WantedInEveryPrecisionAndUnknownOnesAreRefused) {
  EXPECT_TRUE(WantsChannelsLast(Precision::kFp32, /*asked=*/false));
  EXPECT_TRUE(WantsChannelsLast(Precision::kFp32, /*asked=*/true));
  EXPECT_TRUE(WantsChannelsLast(Precision::kBf16, false));
  EXPECT_TRUE(WantsChannelsLast(Precision::kFp16, false));
  // A precision is typed: an unknown name is refused where it is read.
  EXPECT_FALSE(Parse<Precision>("fp8").has_value());
}

TEST(KeepFreedMemoryForReuse, LargeActivationSizedBlocksComeFromTheHeap) {
  ASSERT_TRUE(KeepFreedMemoryForReuse());
  // 24 MiB: mmap()ed under glibc's default (dynamic, from 128 KiB) threshold.
  const size_t mapped_before = mallinfo2().hblks;
  void* block = std::malloc(24 << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  std::free(block);
}

TEST(ChannelsLast, ConvolutionGivesTheSameNumbersInEitherLayout) {
  torch::manual_seed(3);
  torch::nn::Sequential model(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)),
      torch::nn::BatchNorm2d(4), torch::nn::ReLU(),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(4, 3, 3)));
  const torch::Tensor x = torch::randn({5, 2, 8, 8});
  const torch::Tensor reference = model->forward(x);
  const std::string checksum = ParameterChecksum(*model);
  const torch::Tensor weight = model->parameters()[0];

  ToChannelsLast(*model);
  EXPECT_TRUE(model->parameters()[0].is_same(weight));  // same tensor object
  EXPECT_TRUE(
      weight.is_contiguous(at::MemoryFormat::ChannelsLast));  // restrided
  EXPECT_EQ(ParameterChecksum(*model), checksum);  // values unchanged
  const torch::Tensor input = ChannelsLastInput(x);
  EXPECT_TRUE(input.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(input, x));
  EXPECT_TRUE(torch::allclose(model->forward(input), reference,
                              /*rtol=*/1e-5, /*atol=*/1e-5));
}

TEST(ParameterChecksum, ChangesWithAnyBitOfAnyParameterOrBuffer) {
  torch::manual_seed(1);
  torch::nn::Sequential model(torch::nn::Linear(3, 2),
                              torch::nn::BatchNorm1d(2));
  const std::string before = ParameterChecksum(*model);
  EXPECT_EQ(before.size(), 16u);
  EXPECT_EQ(ParameterChecksum(*model), before);
  {
    torch::NoGradGuard no_grad;
    model->parameters()[0][0][0].add_(1e-7);
  }
  const std::string after_parameter = ParameterChecksum(*model);
  EXPECT_NE(after_parameter, before);
  model->buffers()[0][0].add_(1.0);  // BatchNorm running mean
  EXPECT_NE(ParameterChecksum(*model), after_parameter);
}

TEST(Determinism, TurnsOnDeterministicAlgorithmsAndFixesThreads) {
  EnableDeterminism(/*threads=*/1);
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
  EXPECT_EQ(torch::get_num_threads(), 1);
  at::globalContext().setDeterministicAlgorithms(false, false);
}

}  // namespace
}  // namespace hpcai500::worker
