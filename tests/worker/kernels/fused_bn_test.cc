// The fused batch norm + (add +) ReLU on the CPU: the formulas and launch
// plan the CUDA kernels share (fused_bn_math.h), and FusedBatchNormAct2d
// through the host implementation of those formulas held to
// torch::nn::BatchNorm2d + ReLU (+ add): forward, gradients, running
// statistics, evaluation. tests/worker/models/resnet_fused_bn_test.cc
// holds the ResNet built with it.
#include "worker/kernels/fused_bn.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "worker/kernels/fused_bn_math.h"

namespace hpcai500::worker {
namespace {

namespace k = kernels;

// fp32 against fp32: the two differ only in rounding order (x * scale +
// shift against (x - mean) * invstd * gamma + beta; float sums against
// LibTorch's).
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;

void ExpectClose(const torch::Tensor& got, const torch::Tensor& want,
                 const std::string& what, double atol = kAtol,
                 double rtol = kRtol) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const torch::Tensor g = got.to(torch::kDouble);
  const torch::Tensor w = want.to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(g, w, rtol, atol))
      << what << ": max |difference| " << (g - w).abs().max().item<double>()
      << ", max |want| " << w.abs().max().item<double>();
}

// count, mean and sum of squared deviations in double, one pass over the
// values with their exact mean.
struct Exact {
  double count = 0, mean = 0, m2 = 0;
};

Exact ExactStats(const std::vector<double>& values) {
  Exact e;
  e.count = values.size();
  for (double v : values) e.mean += v;
  e.mean /= e.count;
  for (double v : values) e.m2 += (v - e.mean) * (v - e.mean);
  return e;
}

// A part's statistics as a kernel thread makes them: sums about its first
// value, then one division.
k::WelfordState ThreadStats(const std::vector<double>& values, size_t begin,
                            size_t end) {
  if (begin == end) return k::WelfordState();
  k::ShiftedSums sums{static_cast<float>(values[begin])};
  for (size_t i = begin; i < end; ++i) {
    k::ShiftedAdd(sums, static_cast<float>(values[i]));
  }
  return k::ToWelford(sums);
}

// Values around 1000 with spread 0.01, where a plain sum of squares in fp32
// would lose the variance to cancellation, cut at random points into parts
// (some empty), each summed as a thread sums, then merged left to right and
// as a pairwise tree: every split and order gives the one-pass statistics.
TEST(FusedBnMath, WelfordMergeOfAnySplitEqualsTheOnePassStatistics) {
  std::mt19937 gen(3);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> values;
  for (int i = 0; i < 10000; ++i) values.push_back(1000.0 + noise(gen));
  const Exact want = ExactStats(values);
  const double var = want.m2 / want.count;
  for (int split = 0; split < 20; ++split) {
    std::uniform_int_distribution<size_t> cut(0, values.size());
    std::vector<size_t> cuts = {0, values.size()};
    const int parts = 1 + split * 7;
    for (int c = 1; c < parts; ++c) cuts.push_back(cut(gen));
    std::sort(cuts.begin(), cuts.end());
    std::vector<k::WelfordState> states;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      states.push_back(ThreadStats(values, cuts[c], cuts[c + 1]));
    }
    k::WelfordState in_order;
    for (const k::WelfordState& s : states) {
      in_order = k::WelfordMerge(in_order, s);
    }
    std::vector<k::WelfordState> tree = states;
    while (tree.size() > 1) {
      std::vector<k::WelfordState> next;
      for (size_t i = 0; i < tree.size(); i += 2) {
        next.push_back(i + 1 < tree.size()
                           ? k::WelfordMerge(tree[i], tree[i + 1])
                           : tree[i]);
      }
      tree = next;
    }
    SCOPED_TRACE(std::to_string(parts) + " parts");
    for (const k::WelfordState& s : {in_order, tree[0]}) {
      EXPECT_EQ(s.count, 10000.0f);
      // A merge rounds the mean to a float: a few ulps (6.1e-5 at 1000).
      EXPECT_NEAR(s.mean, want.mean, 1e-3);
      EXPECT_NEAR(s.m2 / s.count, var, 0.01 * var);
    }
  }
  // An empty part changes nothing, on either side.
  const k::WelfordState some = ThreadStats(values, 0, 100);
  for (const k::WelfordState& s : {k::WelfordMerge(some, k::WelfordState()),
                                   k::WelfordMerge(k::WelfordState(), some)}) {
    EXPECT_EQ(s.count, some.count);
    EXPECT_EQ(s.mean, some.mean);
    EXPECT_EQ(s.m2, some.m2);
  }
}

// A thread's sums about its first value keep the variance of data far from
// zero, and one value has none.
TEST(FusedBnMath, ShiftedSumsGiveTheStatisticsOfTheirValues) {
  const std::vector<double> values = {-3e4 + 1, -3e4 + 2, -3e4 + 4, -3e4 + 9};
  const Exact want = ExactStats(values);
  const k::WelfordState got = ThreadStats(values, 0, values.size());
  EXPECT_EQ(got.count, 4.0f);
  EXPECT_FLOAT_EQ(got.mean, want.mean);
  EXPECT_FLOAT_EQ(got.m2, want.m2);
  const k::WelfordState one = ThreadStats(values, 2, 3);
  EXPECT_EQ(one.count, 1.0f);
  EXPECT_EQ(one.mean, static_cast<float>(values[2]));
  EXPECT_EQ(one.m2, 0.0f);
}

TEST(FusedBnMath, RunningStatsUseTheUnbiasedVarianceAndMomentum) {
  float running_mean = 1.0f;
  float running_var = 2.0f;
  k::UpdateRunningStats(/*mean=*/3.0f, /*biased_var=*/4.0f, /*count=*/5.0f,
                        /*momentum=*/0.25f, running_mean, running_var);
  EXPECT_FLOAT_EQ(running_mean, 0.25f * 3.0f + 0.75f * 1.0f);
  EXPECT_FLOAT_EQ(running_var, 0.25f * 4.0f * 5.0f / 4.0f + 0.75f * 2.0f);
}

TEST(FusedBnMath, ReluPassesNaNAndMasksTheGradientByTheOutput) {
  const k::AffineCoeffs identity{1.0f, 0.0f};
  EXPECT_EQ(k::ForwardElement(-2.0f, 0.5f, identity), 0.0f);
  EXPECT_EQ(k::ForwardElement(2.0f, 0.5f, identity), 2.5f);
  EXPECT_TRUE(std::isnan(k::ForwardElement(NAN, 0.0f, identity)));
  EXPECT_EQ(k::ReluGrad(3.0f, 0.0f), 0.0f);
  EXPECT_EQ(k::ReluGrad(3.0f, 1e-30f), 3.0f);
}

// 16-byte loads where the rows start on 16-byte boundaries and the call's
// pointers are aligned; one value at a time otherwise.
TEST(FusedBnPlan, VectorLoadsOnlyWhereEveryRowIsAligned) {
  EXPECT_EQ(k::VectorElements(64, /*element_bytes=*/2, /*aligned=*/true), 8);
  EXPECT_EQ(k::VectorElements(64, 4, true), 4);
  EXPECT_EQ(k::VectorElements(2048, 2, true), 8);
  EXPECT_EQ(k::VectorElements(36, 4, true), 4);
  EXPECT_EQ(k::VectorElements(36, 2, true), 1);  // 72-byte rows
  EXPECT_EQ(k::VectorElements(33, 4, true), 1);
  EXPECT_EQ(k::VectorElements(3, 2, true), 1);
  EXPECT_EQ(k::VectorElements(64, 2, /*aligned=*/false), 1);
}

// The plan covers every channel and row with grid sizes CUDA takes, on
// ResNet-50's shapes at batch 256 and on small ones, for each vector width.
TEST(FusedBnPlan, CoversEveryChannelWithinCudaLimits) {
  struct Shape {
    int64_t rows, channels;
  };
  const std::vector<Shape> shapes = {{256 * 112 * 112, 64},
                                     {256 * 56 * 56, 256},
                                     {256 * 28 * 28, 512},
                                     {256 * 14 * 14, 1024},
                                     {256 * 7 * 7, 2048},
                                     {2, 1},
                                     {3, 33},
                                     {5, 8},
                                     {1, 4097},
                                     {int64_t{1} << 31, 3}};
  for (const Shape& s : shapes) {
    for (int vector : {1, 4, 8}) {
      if (s.channels % vector != 0) continue;
      const k::ReductionPlan plan =
          k::PlanReduction(s.rows, s.channels, vector);
      SCOPED_TRACE(std::to_string(s.rows) + " x " + std::to_string(s.channels) +
                   " by " + std::to_string(vector));
      EXPECT_EQ(plan.vector, vector);
      EXPECT_EQ(plan.lanes * plan.row_threads, k::kReduceThreads);
      EXPECT_LE(plan.lanes, k::kMaxLanes);
      EXPECT_EQ(plan.lanes & (plan.lanes - 1), 0) << "a power of two";
      const int64_t per_block = int64_t{plan.lanes} * vector;
      EXPECT_GE(plan.channel_blocks * per_block, s.channels);
      EXPECT_LT((plan.channel_blocks - 1) * per_block, s.channels);
      EXPECT_GE(plan.row_blocks, 1);
      EXPECT_LE(plan.row_blocks, 65535);
      // No row block without a row to read.
      EXPECT_LE((plan.row_blocks - 1) * plan.row_threads, s.rows);
      EXPECT_GE(k::WorkspaceFloats(s.rows, s.channels),
                3 * plan.row_blocks * s.channels + 3 * s.channels);
      const int64_t blocks = k::ElementwiseBlocks(s.rows * s.channels / vector);
      EXPECT_GE(blocks, 1);
      EXPECT_LE(blocks, k::kMaxElementwiseBlocks);
    }
  }
  // Enough blocks to fill a large GPU at ResNet-50's widest layer, and a
  // warp's loads contiguous there: 8 lanes of 8 bf16 cover a row of 64.
  const k::ReductionPlan first = k::PlanReduction(256 * 112 * 112, 64, 8);
  EXPECT_GE(first.channel_blocks * first.row_blocks, 512);
  EXPECT_EQ(first.lanes, 8);
}

// The element-wise kernels find a load's channel group by advancing it with
// the grid stride modulo the group count; replayed here for every thread.
TEST(FusedBnPlan, GridStrideChannelAdvanceIsTheElementsChannel) {
  for (int64_t channels : {1, 3, 64, 255, 256, 257}) {
    const int64_t elements = 5 * channels + 11;
    const int64_t stride = int64_t{2} * k::kElementwiseThreads;  // 2 blocks
    const int64_t c_step = stride % channels;
    for (int64_t first = 0; first < stride; ++first) {
      int64_t c = first % channels;
      for (int64_t i = first; i < elements; i += stride) {
        ASSERT_EQ(c, i % channels) << "channels " << channels << " i " << i;
        c += c_step;
        if (c >= channels) c -= channels;
      }
    }
  }
}

struct Case {
  int64_t batch, channels, height, width;
  bool channels_last;
  bool residual;
};

std::string Name(const Case& c) {
  return std::to_string(c.batch) + "x" + std::to_string(c.channels) + "x" +
         std::to_string(c.height) + "x" + std::to_string(c.width) +
         (c.channels_last ? " channels-last" : " NCHW") +
         (c.residual ? " with residual" : "");
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (bool channels_last : {false, true}) {
    for (bool residual : {false, true}) {
      cases.push_back({4, 64, 6, 5, channels_last, residual});
      cases.push_back({2, 7, 3, 3, channels_last, residual});  // odd C
      cases.push_back({1, 3, 4, 1, channels_last, residual});  // batch 1
      cases.push_back({5, 1, 1, 1, channels_last, residual});  // one channel
    }
  }
  return cases;
}

torch::Tensor Input(const Case& c, double offset) {
  torch::Tensor x =
      torch::randn({c.batch, c.channels, c.height, c.width}) * 2.0 + offset;
  if (c.channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  return x;
}

// Random gamma and beta, so that the tests do not pass for gamma 1, beta 0
// alone.
void RandomAffine(torch::Tensor& weight, torch::Tensor& bias) {
  torch::NoGradGuard no_grad;
  weight.copy_(torch::rand_like(weight) + 0.5);
  bias.copy_(torch::randn_like(bias) * 0.3);
}

struct Pair {
  torch::nn::BatchNorm2d plain;
  FusedBatchNormAct2d fused;
};

Pair MakePair(int64_t channels) {
  Pair p{torch::nn::BatchNorm2d(channels), FusedBatchNormAct2d(channels)};
  RandomAffine(p.plain->weight, p.plain->bias);
  torch::NoGradGuard no_grad;
  p.fused->weight.copy_(p.plain->weight);
  p.fused->bias.copy_(p.plain->bias);
  return p;
}

torch::Tensor PlainForward(Pair& p, const torch::Tensor& x,
                           const torch::Tensor& residual) {
  torch::Tensor y = p.plain(x);
  if (residual.defined()) y = y + residual;
  return torch::relu(y);
}

TEST(FusedBatchNormAct2d, TrainingMatchesBatchNormReluForwardAndBackward) {
  torch::manual_seed(1);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(Name(c));
    Pair p = MakePair(c.channels);
    for (int step = 0; step < 3; ++step) {
      torch::Tensor x = Input(c, /*offset=*/step).requires_grad_(true);
      torch::Tensor r =
          c.residual ? Input(c, 0.0).requires_grad_(true) : torch::Tensor();
      torch::Tensor x2 = x.detach().clone().requires_grad_(true);
      torch::Tensor r2 =
          c.residual ? r.detach().clone().requires_grad_(true) : r;
      torch::Tensor want = PlainForward(p, x, r);
      torch::Tensor got = p.fused(x2, r2);
      ExpectClose(got, want, "y");
      EXPECT_EQ(got.suggest_memory_format(), x.suggest_memory_format());

      torch::Tensor dy = torch::randn_like(want);
      want.backward(dy);
      got.backward(dy);
      ExpectClose(x2.grad(), x.grad(), "dx", 1e-4, 1e-3);
      if (c.residual) ExpectClose(r2.grad(), r.grad(), "dresidual");
      ExpectClose(p.fused->weight.grad(), p.plain->weight.grad(), "dgamma",
                  1e-4, 1e-3);
      ExpectClose(p.fused->bias.grad(), p.plain->bias.grad(), "dbeta", 1e-4,
                  1e-3);
      p.plain->zero_grad();
      p.fused->zero_grad();
    }
    ExpectClose(p.fused->running_mean, p.plain->running_mean, "running_mean");
    ExpectClose(p.fused->running_var, p.plain->running_var, "running_var");
    EXPECT_EQ(p.fused->num_batches_tracked.item<int64_t>(), 3);
    EXPECT_EQ(p.plain->num_batches_tracked.item<int64_t>(), 3);
  }
}

TEST(FusedBatchNormAct2d, EvaluationUsesTheRunningStatistics) {
  torch::manual_seed(2);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(Name(c));
    Pair p = MakePair(c.channels);
    for (int step = 0; step < 2; ++step) {  // running stats away from 0, 1
      const torch::Tensor x = Input(c, 1.5);
      PlainForward(p, x, torch::Tensor());
      p.fused(x);
    }
    p.plain->eval();
    p.fused->eval();
    torch::Tensor x = Input(c, 0.5).requires_grad_(true);
    torch::Tensor x2 = x.detach().clone().requires_grad_(true);
    torch::Tensor r = c.residual ? Input(c, 0.0) : torch::Tensor();
    torch::Tensor want = PlainForward(p, x, r);
    torch::Tensor got = p.fused(x2, r);
    ExpectClose(got, want, "eval y");
    torch::Tensor dy = torch::randn_like(want);
    want.backward(dy);
    got.backward(dy);
    ExpectClose(x2.grad(), x.grad(), "eval dx", 1e-4, 1e-3);
    ExpectClose(p.fused->weight.grad(), p.plain->weight.grad(), "eval dgamma",
                1e-4, 1e-3);
    // Evaluation leaves the running statistics alone.
    EXPECT_EQ(p.fused->num_batches_tracked.item<int64_t>(), 2);
  }
}

TEST(FusedBatchNormAct2d, MomentumNoneIsTheCumulativeAverage) {
  torch::manual_seed(4);
  torch::nn::BatchNormOptions options(5);
  options.momentum(std::nullopt);
  torch::nn::BatchNorm2d plain(options);
  FusedBatchNormAct2d fused(options);
  for (int step = 0; step < 3; ++step) {
    torch::Tensor x = torch::randn({3, 5, 2, 2}) + step;
    plain(x);
    fused(x);
  }
  ExpectClose(fused->running_mean, plain->running_mean, "running_mean");
  ExpectClose(fused->running_var, plain->running_var, "running_var");
}

TEST(FusedBatchNormAct2d, RefusesOneValuePerChannelInTraining) {
  FusedBatchNormAct2d fused(4);
  try {
    fused(torch::randn({1, 4, 1, 1}));
    ADD_FAILURE() << "took a batch of one value per channel";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Expected more than 1 value"),
              std::string::npos)
        << e.what();
  }
  fused->eval();
  EXPECT_EQ(fused(torch::randn({1, 4, 1, 1})).sizes(),
            torch::IntArrayRef({1, 4, 1, 1}));
  EXPECT_THROW(
      FusedBatchNormAct2d(torch::nn::BatchNormOptions(3).affine(false)),
      std::invalid_argument);
}

// bf16 in, bf16 out, fp32 statistics: within one bf16 rounding (2^-8
// relative) of batch norm in fp32 on the same bf16 values, rounded once.
TEST(FusedBatchNormAct2d, Bf16ReadsAndWritesBf16WithFp32Statistics) {
  torch::manual_seed(5);
  Pair p = MakePair(6);
  torch::Tensor x = (torch::randn({4, 6, 5, 5}) * 3 + 2)
                        .to(torch::kBFloat16)
                        .contiguous(torch::MemoryFormat::ChannelsLast);
  torch::Tensor r = torch::randn({4, 6, 5, 5}).to(torch::kBFloat16);
  torch::Tensor got = p.fused(x, r);
  EXPECT_EQ(got.scalar_type(), torch::kBFloat16);
  torch::Tensor want =
      torch::relu(p.plain(x.to(torch::kFloat)) + r.to(torch::kFloat));
  ExpectClose(got, want, "bf16 y", /*atol=*/1e-2, /*rtol=*/1.0 / 128);
  ExpectClose(p.fused->running_mean, p.plain->running_mean, "running_mean");
  ExpectClose(p.fused->running_var, p.plain->running_var, "running_var");
}

// A residual of another dtype (fp32 beside bf16 data) is added in fp32 and
// gets its gradient in its own dtype.
TEST(FusedBatchNormAct2d, ResidualOfAnotherDtypeGetsItsOwnGradientDtype) {
  torch::manual_seed(6);
  FusedBatchNormAct2d fused(3);
  torch::Tensor x =
      torch::randn({2, 3, 4, 4}).to(torch::kBFloat16).requires_grad_(true);
  torch::Tensor r = torch::randn({2, 3, 4, 4}).requires_grad_(true);
  torch::Tensor y = fused(x, r);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  y.sum().backward();
  EXPECT_EQ(x.grad().scalar_type(), torch::kBFloat16);
  ASSERT_TRUE(r.grad().defined());
  EXPECT_EQ(r.grad().scalar_type(), torch::kFloat);
  // d(sum)/d residual is the ReLU's mask.
  ExpectClose(r.grad(), y.gt(0).to(torch::kFloat), "dresidual");
}

}  // namespace
}  // namespace hpcai500::worker
