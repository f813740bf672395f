// The fused batch-norm CUDA kernels (worker/kernels) on a GPU (ctest label
// gpu; bench/gpu.sh runs them): against cuDNN's batch norm + ReLU (+ add)
// on ResNet-50's shapes in fp32 and bf16 channels-last (forward, backward,
// running statistics, evaluation; the vector and the scalar paths), and
// ResNet-50 trained 20 steps with and without ResNetOptions::fused_bn. Each
// test skips, saying why, where LibTorch sees no GPU.
//
// Tolerances, as the largest difference relative to the largest magnitude
// of the reference tensor: fp32 1e-4 for outputs and running statistics,
// 1e-3 for gradients (sums of up to 400,000 terms in another order); bf16
// 2^-6 for outputs and gradients (one or two bf16 roundings: cuDNN rounds
// bn(x) to bf16 before the add, the kernels round once after it) and 1e-3
// for running statistics (fp32 from the same bf16 values).
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/worker/gpu_skip.h"
#include "tests/worker/loss_curves.h"
#include "worker/kernels/fused_bn.h"
#include "worker/models/resnet.h"
#include "worker/train/precision.h"

namespace hpcai500::worker {
namespace {

// Skips without a GPU; with one, the kernels must have been built.
#define SKIP_WITHOUT_GPU_KERNELS()        \
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false); \
  ASSERT_TRUE(FusedBnKernelsBuilt()) << "a CUDA LibTorch without the kernels"

// max |got - want| / max |want|, in double.
double MaxRelativeError(const torch::Tensor& got, const torch::Tensor& want) {
  const torch::Tensor g = got.to(torch::kDouble).cpu();
  const torch::Tensor w = want.to(torch::kDouble).cpu();
  const double scale = std::max(w.abs().max().item<double>(), 1e-12);
  return (g - w).abs().max().item<double>() / scale;
}

#define EXPECT_RELATIVE(got, want, tolerance, what) \
  EXPECT_LE(MaxRelativeError(got, want), tolerance) \
      << what << " (max |want| " << (want).abs().max().item<double>() << ")"

struct Shape {
  int64_t n, c, h, w;
};

std::string Name(const Shape& s, torch::ScalarType dtype, bool residual) {
  return std::to_string(s.n) + "x" + std::to_string(s.c) + "x" +
         std::to_string(s.h) + "x" + std::to_string(s.w) + " " +
         std::string(c10::toString(dtype)) + (residual ? " with residual" : "");
}

// ResNet-50's batch-norm shapes at batch 32 (the stem, the four stages'
// widths: 16-byte loads), and odd ones: 36 channels (fp32 4 at a time,
// bf16 one at a time) and 33 (one at a time).
std::vector<Shape> ResNet50Shapes() {
  return {{32, 64, 112, 112}, {32, 64, 56, 56},  {32, 256, 56, 56},
          {32, 128, 28, 28},  {32, 512, 28, 28}, {32, 1024, 14, 14},
          {32, 2048, 7, 7},   {4, 36, 9, 9},     {3, 33, 5, 7}};
}

struct Tolerance {
  double output, gradient, stats;
};

Tolerance ToleranceFor(torch::ScalarType dtype) {
  if (dtype == torch::kBFloat16) return {1.0 / 64, 1.0 / 64, 1e-3};
  return {1e-4, 1e-3, 1e-4};
}

torch::Tensor RandomNhwc(const Shape& s, torch::ScalarType dtype,
                         double offset) {
  return (torch::randn({s.n, s.c, s.h, s.w}, torch::kCUDA) * 2 + offset)
      .to(dtype)
      .contiguous(torch::MemoryFormat::ChannelsLast);
}

// One training step of both, then evaluation, compared.
void CompareWithCudnn(const Shape& s, torch::ScalarType dtype, bool residual) {
  SCOPED_TRACE(Name(s, dtype, residual));
  const Tolerance tol = ToleranceFor(dtype);
  torch::nn::BatchNorm2d plain(s.c);
  FusedBatchNormAct2d fused(s.c);
  plain->to(torch::kCUDA);
  fused->to(torch::kCUDA);
  {
    torch::NoGradGuard no_grad;
    plain->weight.copy_(torch::rand({s.c}, torch::kCUDA) + 0.5);
    plain->bias.copy_(torch::randn({s.c}, torch::kCUDA) * 0.3);
    fused->weight.copy_(plain->weight);
    fused->bias.copy_(plain->bias);
  }
  torch::Tensor x = RandomNhwc(s, dtype, 1.0).requires_grad_(true);
  torch::Tensor x2 = x.detach().clone().requires_grad_(true);
  torch::Tensor r, r2;
  if (residual) {
    r = RandomNhwc(s, dtype, 0.0).requires_grad_(true);
    r2 = r.detach().clone().requires_grad_(true);
  }
  torch::Tensor want = plain(x);
  if (residual) want = want + r;
  want = torch::relu(want);
  torch::Tensor got = fused(x2, r2);
  ASSERT_EQ(got.scalar_type(), dtype);
  EXPECT_TRUE(got.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_RELATIVE(got, want, tol.output, "y");

  torch::Tensor dy = torch::randn_like(want);
  want.backward(dy);
  got.backward(dy);
  EXPECT_RELATIVE(x2.grad(), x.grad(), tol.gradient, "dx");
  if (residual) {
    EXPECT_RELATIVE(r2.grad(), r.grad(), tol.gradient, "dres");
  }
  EXPECT_RELATIVE(fused->weight.grad(), plain->weight.grad(), tol.gradient,
                  "dgamma");
  EXPECT_RELATIVE(fused->bias.grad(), plain->bias.grad(), tol.gradient,
                  "dbeta");
  EXPECT_RELATIVE(fused->running_mean, plain->running_mean, tol.stats,
                  "running_mean");
  EXPECT_RELATIVE(fused->running_var, plain->running_var, tol.stats,
                  "running_var");

  plain->eval();
  fused->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x_eval = RandomNhwc(s, dtype, 0.5);
  torch::Tensor want_eval = plain(x_eval);
  if (residual) want_eval = want_eval + r.detach();
  want_eval = torch::relu(want_eval);
  EXPECT_RELATIVE(fused(x_eval, residual ? r.detach() : torch::Tensor()),
                  want_eval, tol.output, "eval y");
}

TEST(FusedBnGpu, KernelsMatchCudnnOnResNet50ShapesInFp32AndBf16) {
  SKIP_WITHOUT_GPU_KERNELS();
  torch::manual_seed(1);
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const Shape& s : ResNet50Shapes()) {
      for (bool residual : {false, true}) CompareWithCudnn(s, dtype, residual);
    }
  }
}

TEST(FusedBnGpu, Fp16AndNchwInputsAreTaken) {
  SKIP_WITHOUT_GPU_KERNELS();
  torch::manual_seed(2);
  FusedBatchNormAct2d fused(16);
  torch::nn::BatchNorm2d plain(16);
  fused->to(torch::kCUDA);
  plain->to(torch::kCUDA);
  // NCHW is made channels-last for the kernels.
  torch::Tensor x = torch::randn({4, 16, 9, 9}, torch::kCUDA);
  EXPECT_RELATIVE(fused(x), torch::relu(plain(x)), 1e-4, "NCHW fp32");
  torch::Tensor h = torch::randn({4, 16, 9, 9}, torch::kCUDA).to(torch::kHalf);
  torch::Tensor got = fused(h);
  EXPECT_EQ(got.scalar_type(), torch::kHalf);
  EXPECT_RELATIVE(got, torch::relu(plain(h.to(torch::kFloat))), 1.0 / 512,
                  "fp16");
  torch::cuda::synchronize();
}

// Data that does not start on a 16-byte boundary (a view one element into
// its storage, still dense channels-last) goes through the one-value path,
// with the same results.
TEST(FusedBnGpu, UnalignedDataTakesTheScalarPath) {
  SKIP_WITHOUT_GPU_KERNELS();
  torch::manual_seed(5);
  const Shape s{8, 64, 14, 14};
  for (torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const Tolerance tol = ToleranceFor(dtype);
    const int64_t numel = s.n * s.c * s.h * s.w;
    const torch::Tensor storage =
        (torch::randn({numel + 1}, torch::kCUDA) + 1).to(dtype);
    const torch::Tensor x = storage.narrow(0, 1, numel)
                                .view({s.n, s.h, s.w, s.c})
                                .permute({0, 3, 1, 2});
    ASSERT_TRUE(x.is_contiguous(torch::MemoryFormat::ChannelsLast));
    ASSERT_NE(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16, 0u);
    torch::nn::BatchNorm2d plain(s.c);
    FusedBatchNormAct2d fused(s.c);
    plain->to(torch::kCUDA);
    fused->to(torch::kCUDA);
    EXPECT_RELATIVE(fused(x), torch::relu(plain(x)), tol.output, "y");
    EXPECT_RELATIVE(fused->running_var, plain->running_var, tol.stats,
                    "running_var");
  }
}

// ResNet-50 v1.5 in bf16 autocast, channels-last, SGD with momentum: 20
// steps from the same seed on the same batches with and without the fused
// kernels. bf16 rounds differently in the two and the difference grows as
// the weights drift apart (tests/worker/loss_curves.h): the first 3 steps'
// losses within 2%, the rest within 10%, and both curves fall on average
// (in fp32, below 0.1% in the CPU tests).
TEST(FusedBnGpu, ResNet50LossCurveFollowsThePlainModelOver20Steps) {
  SKIP_WITHOUT_GPU_KERNELS();
  const torch::Device cuda(torch::kCUDA);
  auto losses = [&](bool fused_bn) {
    torch::manual_seed(3);
    ResNetOptions options;
    options.depth = 50;
    options.fused_bn = fused_bn;
    ResNet model(options);
    model->to(cuda);
    ToChannelsLast(*model);
    torch::optim::SGD sgd(model->parameters(),
                          torch::optim::SGDOptions(0.02).momentum(0.9));
    torch::manual_seed(4);
    // Eight fixed batches seen in turn, so the loss can fall.
    std::vector<torch::Tensor> images, labels;
    for (int b = 0; b < 8; ++b) {
      images.push_back(
          ChannelsLastInput(torch::randn({32, 3, 224, 224}, cuda)));
      labels.push_back(torch::randint(
          1000, {32}, torch::TensorOptions().dtype(torch::kLong).device(cuda)));
    }
    std::vector<double> out;
    for (int step = 0; step < 20; ++step) {
      sgd.zero_grad();
      torch::Tensor loss;
      {
        AutocastScope autocast(Precision::kBf16, cuda);
        loss = torch::nn::functional::cross_entropy(
            model->forward(images[step % 8]), labels[step % 8]);
      }
      loss.backward();
      sgd.step();
      out.push_back(loss.item<double>());
    }
    return out;
  };
  const std::vector<double> plain = losses(false);
  const std::vector<double> fused = losses(true);
  hpcai500::testing::ExpectFollows(plain, fused,
                                   hpcai500::testing::CurveTolerance(), "step");
  hpcai500::testing::ExpectFalls(plain, "plain");
  hpcai500::testing::ExpectFalls(fused, "fused");
}

}  // namespace
}  // namespace hpcai500::worker
