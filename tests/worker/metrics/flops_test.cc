#include "worker/metrics/flops.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "worker/models/resnet_small.h"

namespace hpcai500::worker {
namespace {

// FLOPs of `f()` as a FlopCounter alive around it counts them.
template <typename F>
FlopCount Count(F&& f) {
  FlopCounter counter;
  f();
  return counter.Stop();
}

TEST(FlopCounter, ConvolutionWithStridePaddingAndGroupsMatchesTheHandFormula) {
  torch::NoGradGuard no_grad;
  torch::nn::Conv2d conv(
      torch::nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  torch::Tensor y;
  const FlopCount c = Count([&] { y = conv(torch::zeros({2, 4, 9, 9})); });
  ASSERT_EQ(y.sizes(), torch::IntArrayRef({2, 6, 5, 5}));
  // 2 * Cin/groups * kh * kw * Cout * Hout * Wout, for 2 images; the bias is
  // not counted.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (2 * 2 * 3 * 3 * 6 * 5 * 5));
}

TEST(FlopCounter, RectangularDilatedConvolutionMatchesTheHandFormula) {
  torch::NoGradGuard no_grad;
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, {3, 5})
                             .padding({0, 2})
                             .dilation(2)
                             .bias(false));
  torch::Tensor y;
  const FlopCount c = Count([&] { y = conv(torch::zeros({1, 3, 12, 10})); });
  // Hout = 12 - 2*(3-1) = 8; Wout = 10 + 4 - 2*(5-1) = 6.
  ASSERT_EQ(y.sizes(), torch::IntArrayRef({1, 8, 8, 6}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (3 * 3 * 5) * (8 * 8 * 6));
}

TEST(FlopCounter, TransposedConvolutionCountsEachInputTimesItsOutputs) {
  torch::NoGradGuard no_grad;
  torch::nn::ConvTranspose2d deconv(
      torch::nn::ConvTranspose2dOptions(4, 6, 3).stride(2).groups(2));
  const FlopCount c = Count([&] {
    deconv->forward(torch::zeros({2, 4, 5, 5}));
  });
  // Every input element meets Cout/groups * kh * kw weights.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (2 * 4 * 5 * 5) * (3 * 3 * 3));
}

TEST(FlopCounter, MatrixProductsMatchTheHandFormula) {
  const torch::Tensor a = torch::ones({3, 4});
  const torch::Tensor b = torch::ones({4, 5});
  EXPECT_DOUBLE_EQ(Count([&] { torch::mm(a, b); }).flops, 2.0 * 3 * 4 * 5);
  EXPECT_DOUBLE_EQ(Count([&] {
                     torch::addmm(torch::ones({3, 5}), a, b);
                   }).flops,
                   2.0 * 3 * 4 * 5);
  EXPECT_DOUBLE_EQ(Count([&] { torch::matmul(a, b); }).flops, 2.0 * 3 * 4 * 5);

  const torch::Tensor x = torch::ones({7, 3, 4});
  const torch::Tensor y = torch::ones({7, 4, 2});
  EXPECT_DOUBLE_EQ(Count([&] { torch::bmm(x, y); }).flops, 2.0 * 7 * 3 * 4 * 2);
  EXPECT_DOUBLE_EQ(Count([&] {
                     torch::baddbmm(torch::ones({7, 3, 2}), x, y);
                   }).flops,
                   2.0 * 7 * 3 * 4 * 2);
  // Broadcast batched matmul: [7,3,4] x [4,2].
  EXPECT_DOUBLE_EQ(Count([&] {
                     torch::matmul(x, torch::ones({4, 2}));
                   }).flops,
                   2.0 * 7 * 3 * 4 * 2);
  EXPECT_DOUBLE_EQ(Count([&] { torch::matmul(a, torch::ones({4})); }).flops,
                   2.0 * 3 * 4);
}

TEST(FlopCounter, LinearIsCountedOnceNotAgainAsTheProductItCalls) {
  torch::NoGradGuard no_grad;
  torch::nn::Linear linear(12, 5);
  EXPECT_DOUBLE_EQ(Count([&] {
                     linear(torch::zeros({3, 12}));
                   }).flops,
                   3.0 * (2 * 12 * 5));
  // 3-D input goes through matmul inside aten::linear: still once.
  EXPECT_DOUBLE_EQ(Count([&] {
                     linear(torch::zeros({2, 3, 12}));
                   }).flops,
                   2.0 * 3 * (2 * 12 * 5));
}

TEST(FlopCounter, OtherOperatorsAreTalliedApartAndNotAsFlops) {
  const torch::Tensor t = torch::ones({4, 5});
  const FlopCount c = Count([&] {
    torch::relu(t);
    torch::add(t, t);
  });
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.other_ops, 2);
  EXPECT_DOUBLE_EQ(c.other_elements, 40);
}

TEST(FlopCounter, OnlyWhatRunsWhileAliveCounts) {
  const torch::Tensor a = torch::ones({3, 4});
  torch::mm(a, a.t());  // before: not counted
  FlopCounter counter;
  torch::mm(a, a.t());
  const FlopCount c = counter.Stop();
  torch::mm(a, a.t());  // after Stop: not counted
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 4 * 3);
  EXPECT_DOUBLE_EQ(counter.count().flops, c.flops);
}

TEST(FlopCounter, BackwardIsNotCountedEvenInsideTheCounter) {
  torch::nn::Linear linear(6, 4);
  const torch::Tensor x = torch::randn({5, 6});
  FlopCounter counter;
  torch::Tensor loss = linear(x).sum();
  const double forward = counter.count().flops;
  loss.backward();
  EXPECT_DOUBLE_EQ(forward, 5.0 * 2 * 6 * 4);
  EXPECT_DOUBLE_EQ(counter.Stop().flops, forward);
  EXPECT_TRUE(linear->weight.grad().defined());
}

TEST(FlopCounter, CountsPerBatchProportionalToItsSize) {
  ResNetSmall model;
  auto forward_flops = [&](int64_t batch) {
    FlopCounter counter;
    model->forward(torch::zeros({batch, 1, 28, 28}));
    return counter.Stop().flops;
  };
  const double two = forward_flops(2);
  const double five = forward_flops(5);
  EXPECT_GT(two, 0);
  EXPECT_DOUBLE_EQ(five, two / 2 * 5);
}

TEST(FlopCounter, ResNetSmallCountsEveryConvolutionAndTheClassifier) {
  ResNetSmall model;
  // stem 1->16 @28; block1 16->24 /2 @14 (+1x1 projection); block2 24->48
  // /2 @7 (+projection); block3 48->48 @7; fc 48->10.
  const double per_sample =
      2.0 * (1 * 9 * 16 * 28 * 28) +
      2.0 *
          (16 * 9 * 24 * 14 * 14 + 24 * 9 * 24 * 14 * 14 + 16 * 24 * 14 * 14) +
      2.0 * (24 * 9 * 48 * 7 * 7 + 48 * 9 * 48 * 7 * 7 + 24 * 48 * 7 * 7) +
      2.0 * (2 * 48 * 9 * 48 * 7 * 7) + 2.0 * (48 * 10);
  FlopCounter counter;
  torch::Tensor loss = model->forward(torch::randn({3, 1, 28, 28})).sum();
  const FlopCount c = counter.Stop();
  loss.backward();
  EXPECT_DOUBLE_EQ(c.flops, 3 * per_sample);
  // BatchNorm, ReLU, the residual additions and the pooling are others.
  EXPECT_GT(c.other_ops, 10);
}

TEST(FlopCounter, CountsUnderBf16Autocast) {
  torch::NoGradGuard no_grad;
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(2, 4, 3).bias(false));
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  const torch::Tensor x = torch::zeros({1, 2, 5, 5});
  const FlopCount c = Count([&] { conv(x); });
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * (2 * 9) * (4 * 3 * 3));
  // The casts autocast inserts run inside the convolution: not "other".
  EXPECT_EQ(c.other_ops, 0);
}

TEST(FlopCounter, ASecondCounterOnTheSameThreadIsRefused) {
  FlopCounter first;
  EXPECT_THROW(FlopCounter second, c10::Error);
}

TEST(FlopCounter, OtherThreadsAreNotCounted) {
  const torch::Tensor a = torch::ones({8, 8});
  FlopCounter counter;
  std::thread other([&] { torch::mm(a, a); });
  other.join();
  torch::mm(a, torch::ones({8, 2}));
  EXPECT_DOUBLE_EQ(counter.Stop().flops, 2.0 * 8 * 8 * 2);
}

}  // namespace
}  // namespace hpcai500::worker
