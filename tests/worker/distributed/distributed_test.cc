// Two Gloo ranks on loopback as two threads of this process, each with its
// own ProcessGroupGloo over one shared HashStore.
#include "worker/distributed/distributed.h"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "tests/worker/distributed/rank_threads.h"

namespace hpcai500::worker {
namespace {

using std::chrono::milliseconds;

// Runs fn(collectives) on `world` CPU ranks over Gloo, one thread each;
// rethrows the first exception any of them threw.
void RunRanks(int world, const std::function<void(Collectives&)>& fn) {
  testing::RunRanksOnThreads(std::vector<torch::Device>(world, torch::kCPU),
                             DistBackend::kGloo, milliseconds(30000), fn);
}

torch::Tensor FlatGrads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : params) pieces.push_back(p.grad().reshape(-1));
  return torch::cat(pieces);
}

torch::Tensor FlatValues(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : params) pieces.push_back(p.detach().reshape(-1));
  return torch::cat(pieces).clone();
}

double RelativeError(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).norm().item<double>() / want.norm().item<double>();
}

// A small MLP whose initial parameters depend only on `seed`.
torch::nn::Sequential SmallModel(uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(8, 32), torch::nn::ReLU(),
                               torch::nn::Linear(32, 32), torch::nn::ReLU(),
                               torch::nn::Linear(32, 4));
}

// Parameters whose gradient is exactly a given tensor: loss = sum(p * g).
struct FixedGradParams {
  std::vector<torch::Tensor> params;
  void Backward(const std::vector<torch::Tensor>& grads) const {
    torch::Tensor loss = torch::zeros({});
    for (size_t i = 0; i < params.size(); ++i) {
      loss = loss + (params[i] * grads[i]).sum();
    }
    loss.backward();
  }
  void ZeroGrad() const {
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().zero_();
    }
  }
};

FixedGradParams MakeParams(const std::vector<std::vector<int64_t>>& shapes) {
  FixedGradParams f;
  for (const auto& shape : shapes) {
    f.params.push_back(torch::zeros(shape).set_requires_grad(true));
  }
  return f;
}

std::vector<torch::Tensor> RandomGrads(
    const std::vector<std::vector<int64_t>>& shapes, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> out;
  for (const auto& shape : shapes) out.push_back(torch::randn(shape));
  return out;
}

ReducerOptions Options(const std::string& compression, double bucket_mb = 25,
                       int rank = 1) {
  ReducerOptions o;
  o.compression = *Parse<Compression>(compression);
  o.bucket_mb = bucket_mb;
  o.powersgd_rank = rank;
  return o;
}

TEST(GradientReducer, ParametersStayIdenticalOnBothRanksAfterEveryStep) {
  constexpr int kSteps = 5;
  std::vector<torch::nn::Sequential> models = {SmallModel(3), SmallModel(3)};
  std::vector<std::vector<torch::Tensor>> inputs(2), labels(2);
  torch::manual_seed(11);
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < kSteps; ++s) {
      inputs[r].push_back(torch::randn({6, 8}));
      labels[r].push_back(torch::randint(0, 4, {6}));
    }
  }
  const torch::Tensor initial = FlatValues(models[0]->parameters());
  std::vector<std::vector<torch::Tensor>> after(2);
  RunRanks(2, [&](Collectives& c) {
    const int r = c.rank();
    torch::nn::Sequential model = models[r];
    GradientReducer reducer(&c, model->parameters(),
                            Options("none", /*bucket_mb=*/0.002));
    torch::optim::SGD sgd(model->parameters(),
                          torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < kSteps; ++s) {
      sgd.zero_grad();
      // Rank 1's shard runs out at the last step: it contributes nothing.
      const bool has_data = !(r == 1 && s == kSteps - 1);
      reducer.BeginStep(has_data ? 6 : 0);
      if (has_data) {
        torch::nn::functional::cross_entropy(model->forward(inputs[r][s]),
                                             labels[r][s])
            .backward();
      }
      reducer.FinishStep();
      sgd.step();
      after[r].push_back(FlatValues(model->parameters()));
    }
  });
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_TRUE(torch::equal(after[0][s], after[1][s])) << "step " << s;
  }
  EXPECT_GT((after[0].back() - initial).abs().max().item<double>(), 1e-3);
}

// The reducer's gradients against one flat all-reduce after backward,
// weighted by unequal sample counts (3 on rank 0, 5 on rank 1).
void ExpectOverlapMatchesAllReduceAfterBackward(double bucket_mb,
                                                size_t min_buckets) {
  std::vector<torch::nn::Sequential> models = {SmallModel(5), SmallModel(5)};
  torch::manual_seed(12);
  std::vector<torch::Tensor> x = {torch::randn({3, 8}), torch::randn({5, 8})};
  std::vector<torch::Tensor> y = {torch::randint(0, 4, {3}),
                                  torch::randint(0, 4, {5})};
  std::vector<torch::Tensor> reference(2), reduced(2);
  std::vector<CommStats> stats(2);
  std::vector<size_t> buckets(2);
  RunRanks(2, [&](Collectives& c) {
    const int r = c.rank();
    const int64_t local = x[r].size(0);
    std::vector<torch::Tensor> params = models[r]->parameters();
    // Reference: plain autograd::grad (no accumulation, no hooks), one
    // all-reduce of grad * local, divided by the global count.
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(models[r]->forward(x[r]), y[r]);
    std::vector<torch::Tensor> grads = torch::autograd::grad({loss}, params);
    std::vector<torch::Tensor> pieces;
    for (auto& g : grads) pieces.push_back(g.reshape(-1) * local);
    torch::Tensor flat = torch::cat(pieces);
    c.AllReduceSum(flat);
    reference[r] = flat / 8.0;

    GradientReducer reducer(&c, params, Options("none", bucket_mb));
    reducer.BeginStep(local);
    torch::nn::functional::cross_entropy(models[r]->forward(x[r]), y[r])
        .backward();
    reducer.FinishStep();
    reduced[r] = FlatGrads(params);
    stats[r] = reducer.stats();
    buckets[r] = reducer.buckets().size();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::allclose(reduced[r], reference[r], 1e-5, 1e-7))
        << "rank " << r << " max diff "
        << (reduced[r] - reference[r]).abs().max().item<double>();
    EXPECT_GE(buckets[r], min_buckets);
    EXPECT_EQ(stats[r].buckets, static_cast<int64_t>(buckets[r]));
    // Every bucket went out from a hook, while backward still ran.
    EXPECT_EQ(stats[r].buckets_early, stats[r].buckets);
  }
}

TEST(GradientReducer, OneBucketEqualsAllReduceAfterBackward) {
  ExpectOverlapMatchesAllReduceAfterBackward(/*bucket_mb=*/25, 1);
}

TEST(GradientReducer, SeveralBucketsEqualAllReduceAfterBackward) {
  // 0.0005 MB = 524 bytes: three buckets (fc3, fc2, fc1) of the MLP.
  ExpectOverlapMatchesAllReduceAfterBackward(/*bucket_mb=*/0.0005, 3);
}

TEST(GradientReducer, UnusedParametersStillPairUpAcrossRanks) {
  // Rank 0 uses only the first parameter; rank 1 uses both. Buckets that
  // backward never completes are launched by FinishStep, in order.
  const std::vector<std::vector<int64_t>> shapes = {{16}, {16}};
  const std::vector<torch::Tensor> g = RandomGrads(shapes, 21);
  std::vector<torch::Tensor> out(2);
  RunRanks(2, [&](Collectives& c) {
    FixedGradParams f = MakeParams(shapes);
    GradientReducer reducer(&c, f.params, Options("none", 0.00001));
    reducer.BeginStep(1);
    if (c.rank() == 0) {
      (f.params[0] * g[0]).sum().backward();
    } else {
      f.Backward(g);
    }
    reducer.FinishStep();
    out[c.rank()] = FlatGrads(f.params);
  });
  const torch::Tensor want = torch::cat({g[0], g[1] / 2});
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::allclose(out[r], want, 1e-6, 1e-7)) << "rank " << r;
  }
}

// Mean of two ranks' random gradients through `compression`; returns each
// rank's result and its stats.
struct CompressedRun {
  std::vector<torch::Tensor> out{2};
  std::vector<CommStats> stats{2};
  torch::Tensor want;
};

CompressedRun RunCompressed(const std::vector<std::vector<int64_t>>& shapes,
                            const ReducerOptions& options) {
  const std::vector<torch::Tensor> g0 = RandomGrads(shapes, 31);
  const std::vector<torch::Tensor> g1 = RandomGrads(shapes, 32);
  CompressedRun run;
  std::vector<torch::Tensor> want;
  for (size_t i = 0; i < shapes.size(); ++i) {
    want.push_back(((g0[i] + g1[i]) / 2).reshape(-1));
  }
  run.want = torch::cat(want);
  RunRanks(2, [&](Collectives& c) {
    FixedGradParams f = MakeParams(shapes);
    GradientReducer reducer(&c, f.params, options);
    reducer.BeginStep(4);
    f.Backward(c.rank() == 0 ? g0 : g1);
    reducer.FinishStep();
    run.out[c.rank()] = FlatGrads(f.params);
    run.stats[c.rank()] = reducer.stats();
  });
  return run;
}

const std::vector<std::vector<int64_t>> kShapes = {{64, 32, 3, 3}, {64}};
constexpr int64_t kNumel = 64 * 32 * 9 + 64;
constexpr int64_t kCountBytes = 8;  // the float64 sample count per step

TEST(GradientReducer, Fp16CompressionErrorIsBounded) {
  CompressedRun none = RunCompressed(kShapes, Options("none"));
  CompressedRun fp16 = RunCompressed(kShapes, Options("fp16"));
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(RelativeError(none.out[r], none.want), 1e-6);
    const double error = RelativeError(fp16.out[r], fp16.want);
    EXPECT_LT(error, 1e-3) << "rank " << r;
    EXPECT_GT(error, 0.0);  // it really went through half precision
    EXPECT_TRUE(torch::equal(fp16.out[0], fp16.out[1]));
  }
}

TEST(GradientReducer, CountsBytesSentPerCompression) {
  CompressedRun none = RunCompressed(kShapes, Options("none"));
  CompressedRun fp16 = RunCompressed(kShapes, Options("fp16"));
  CompressedRun psgd = RunCompressed(kShapes, Options("powersgd", 25, 2));
  EXPECT_EQ(none.stats[0].bytes, kCountBytes + kNumel * 4);
  EXPECT_EQ(fp16.stats[0].bytes - kCountBytes,
            (none.stats[0].bytes - kCountBytes) / 2);
  // P [64, 2] and the bias in phase 1, Q [288, 2] in phase 2.
  EXPECT_EQ(psgd.stats[0].bytes, kCountBytes + (64 * 2 + 64 + 288 * 2) * 4);
  EXPECT_LT(psgd.stats[0].bytes * 20, none.stats[0].bytes);
  EXPECT_EQ(none.stats[1].bytes, none.stats[0].bytes);
  EXPECT_GE(none.stats[0].wait_seconds, 0.0);
}

TEST(GradientReducer, PowerSgdWarmUpStepsGoUncompressedAndExact) {
  // Two warm-up steps send every gradient whole (the exact mean, no error
  // feedback); the third is compressed.
  const std::vector<torch::Tensor> g0 = RandomGrads(kShapes, 31);
  const std::vector<torch::Tensor> g1 = RandomGrads(kShapes, 32);
  std::vector<torch::Tensor> want;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    want.push_back(((g0[i] + g1[i]) / 2).reshape(-1));
  }
  const torch::Tensor mean = torch::cat(want);
  std::vector<std::vector<int64_t>> bytes(2);
  std::vector<std::vector<double>> errors(2);
  std::vector<double> feedback_during_warmup(2, -1);
  RunRanks(2, [&](Collectives& c) {
    ReducerOptions options = Options("powersgd", 25, 2);
    options.powersgd_warmup_steps = 2;
    FixedGradParams f = MakeParams(kShapes);
    GradientReducer reducer(&c, f.params, options);
    int64_t before = 0;
    for (int step = 0; step < 3; ++step) {
      f.ZeroGrad();
      reducer.BeginStep(4);
      f.Backward(c.rank() == 0 ? g0 : g1);
      reducer.FinishStep();
      bytes[c.rank()].push_back(reducer.stats().bytes - before);
      before = reducer.stats().bytes;
      errors[c.rank()].push_back(RelativeError(FlatGrads(f.params), mean));
      if (step == 1) {
        feedback_during_warmup[c.rank()] =
            reducer.PowerSgdError(0).abs().max().item<double>();
      }
    }
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(bytes[r][0], kCountBytes + kNumel * 4) << "rank " << r;
    EXPECT_EQ(bytes[r][1], kCountBytes + kNumel * 4) << "rank " << r;
    EXPECT_EQ(bytes[r][2], kCountBytes + (64 * 2 + 64 + 288 * 2) * 4);
    EXPECT_LT(errors[r][0], 1e-6);
    EXPECT_LT(errors[r][1], 1e-6);
    EXPECT_GT(errors[r][2], 1e-3);              // rank 2 of a random gradient
    EXPECT_EQ(feedback_during_warmup[r], 0.0);  // nothing withheld yet
  }
}

TEST(GradientReducer, PowerSgdReconstructsALowRankSumExactly) {
  // Rank r's gradient is a b_r^T: the mean is rank 1, so rank-1 PowerSGD
  // is exact and leaves no error to feed back.
  torch::manual_seed(41);
  const torch::Tensor a = torch::randn({48, 1});
  const std::vector<torch::Tensor> g = {a.mm(torch::randn({1, 40})),
                                        a.mm(torch::randn({1, 40}))};
  std::vector<torch::Tensor> out(2), error(2);
  RunRanks(2, [&](Collectives& c) {
    FixedGradParams f = MakeParams({{48, 40}});
    GradientReducer reducer(&c, f.params, Options("powersgd", 25, 1));
    reducer.BeginStep(2);
    f.Backward({g[c.rank()]});
    reducer.FinishStep();
    out[c.rank()] = f.params[0].grad().clone();
    error[c.rank()] = reducer.PowerSgdError(0);
  });
  const torch::Tensor want = (g[0] + g[1]) / 2;
  for (int r = 0; r < 2; ++r) {
    EXPECT_LT(RelativeError(out[r], want), 1e-5) << "rank " << r;
    ASSERT_TRUE(error[r].defined());
    EXPECT_LT(error[r].norm().item<double>(),
              1e-4 * want.norm().item<double>());
  }
  EXPECT_TRUE(torch::equal(out[0], out[1]));
}

TEST(GradientReducer, PowerSgdErrorFeedbackAccumulatesWhatWasNotSent) {
  // Constant full-rank gradients: with error feedback, the sum of what was
  // applied plus the errors still held equals the steps times the mean
  // gradient, and the running average approaches the mean.
  constexpr int kSteps = 30;
  const std::vector<torch::Tensor> g = RandomGrads({{24, 20}, {24, 20}}, 51);
  std::vector<torch::Tensor> applied(2), error(2), first(2);
  RunRanks(2, [&](Collectives& c) {
    FixedGradParams f = MakeParams({{24, 20}});
    GradientReducer reducer(&c, f.params, Options("powersgd", 25, 2));
    torch::Tensor sum = torch::zeros({24, 20});
    for (int s = 0; s < kSteps; ++s) {
      f.ZeroGrad();
      reducer.BeginStep(3);
      f.Backward({g[c.rank()]});
      reducer.FinishStep();
      if (s == 0) first[c.rank()] = f.params[0].grad().clone();
      sum += f.params[0].grad();
    }
    applied[c.rank()] = sum;
    error[c.rank()] = reducer.PowerSgdError(0);
  });
  const torch::Tensor mean = (g[0] + g[1]) / 2;
  EXPECT_TRUE(torch::equal(applied[0], applied[1]));
  EXPECT_LT(RelativeError(applied[0] + error[0] + error[1], mean * kSteps),
            1e-4);
  EXPECT_GT(error[0].norm().item<double>(), 0.0);
  const double first_error = RelativeError(first[0], mean);
  const double average_error = RelativeError(applied[0] / kSteps, mean);
  EXPECT_GT(first_error, 0.3);  // rank 2 of a 24x20 random matrix is lossy
  EXPECT_LT(average_error, first_error / 3);
}

TEST(GradientReducer, OneRankHasNothingToReduce) {
  FixedGradParams f = MakeParams({{4, 4}});
  auto store = c10::make_intrusive<c10d::HashStore>();
  Collectives c(store, 0, 1, milliseconds(1000));
  GradientReducer reducer(&c, f.params, Options("fp16"));
  const torch::Tensor g = torch::randn({4, 4});
  reducer.BeginStep(2);
  f.Backward({g});
  reducer.FinishStep();
  EXPECT_TRUE(torch::equal(f.params[0].grad(), g));
  EXPECT_EQ(reducer.stats().bytes, 0);
}

// --cuda-graph's steps: every rank's batch full, the caller gives the global
// count, so no count is all-reduced (no host sync), and the mean is the same.
TEST(GradientReducer, AGivenGlobalCountSkipsTheCountAllReduce) {
  std::vector<torch::Tensor> counted(2);
  std::vector<torch::Tensor> given(2);
  std::vector<CommStats> counted_stats(2);
  std::vector<CommStats> given_stats(2);
  RunRanks(2, [&](Collectives& c) {
    const int r = c.rank();
    const std::vector<torch::Tensor> g = RandomGrads({{6, 3}}, 40 + r);
    FixedGradParams f = MakeParams({{6, 3}});
    ReducerOptions options = Options("none");
    options.capturable = true;
    GradientReducer reducer(&c, f.params, options);
    reducer.BeginStep(4);
    f.Backward(g);
    reducer.FinishStep();
    counted[r] = f.params[0].grad().clone();
    counted_stats[r] = reducer.stats();
    f.ZeroGrad();
    reducer.BeginStep(4, /*global_samples=*/8);
    f.Backward(g);
    reducer.FinishStep();
    given[r] = f.params[0].grad().clone();
    given_stats[r] = reducer.stats();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(torch::equal(given[r], counted[r]));
    // The second step sent its gradients only, not the 8-byte count.
    EXPECT_EQ(given_stats[r].bytes - counted_stats[r].bytes,
              counted_stats[r].bytes - 8);
  }
}

TEST(GradientReducer, ACapturableReducerRefusesPowerSgd) {
  FixedGradParams f = MakeParams({{16, 16}});
  auto store = c10::make_intrusive<c10d::HashStore>();
  Collectives c(store, 0, 1, milliseconds(1000));
  ReducerOptions options = Options("powersgd");
  options.capturable = true;
  EXPECT_THROW(GradientReducer(&c, f.params, options), std::invalid_argument);
  options.capturable = false;
  EXPECT_NO_THROW(GradientReducer(&c, f.params, options));
}

TEST(GradientReducer, AReplayedStepAddsWhatTheCapturedStepSent) {
  FixedGradParams f = MakeParams({{4, 4}});
  auto store = c10::make_intrusive<c10d::HashStore>();
  Collectives c(store, 0, 1, milliseconds(1000));
  GradientReducer reducer(&c, f.params, Options("none"));
  reducer.CountReplayedStep({/*bytes=*/64, /*wait_seconds=*/0,
                             /*buckets_early=*/1, /*buckets=*/2});
  reducer.CountReplayedStep({64, 0, 1, 2});
  EXPECT_EQ(reducer.stats().bytes, 128);
  EXPECT_EQ(reducer.stats().buckets, 4);
  EXPECT_EQ(reducer.stats().buckets_early, 2);
}

// Whether Gloo reduces bfloat16 in this LibTorch (2.2 on).
bool GlooCarriesBFloat16() {
  auto store = c10::make_intrusive<c10d::HashStore>();
  return Collectives(store, 0, 1, milliseconds(1000)).SupportsBFloat16();
}

TEST(Communication, NcclNeedsCudaAndGlooCarriesEitherDevice) {
  WorkerOptions o;  // cpu, gloo, one rank
  EXPECT_EQ(CheckCommunication(o), "");
  o.args.dist_backend = DistBackend::kNccl;
  EXPECT_NE(CheckCommunication(o).find("--dist-backend nccl needs --device "
                                       "cuda (NCCL carries CUDA tensors only)"),
            std::string::npos);
  o.world_size = 2;
  o.args.device = Device::kCuda;
#ifdef USE_C10D_NCCL
  EXPECT_EQ(CheckCommunication(o), "");
#else
  EXPECT_NE(CheckCommunication(o).find("needs a LibTorch built with NCCL"),
            std::string::npos);
#endif
  // Two ranks on one GPU: Gloo all-reduces the CUDA tensors.
  o.args.dist_backend = DistBackend::kGloo;
  EXPECT_EQ(CheckCommunication(o), "");
  o.args.compression = Compression::kPowerSgd;
  EXPECT_EQ(CheckCommunication(o), "");
}

TEST(Communication, RefusesBf16CompressionOnlyWhereGlooLacksIt) {
  WorkerOptions o;
  o.world_size = 2;
  o.args.compression = Compression::kBf16;
  if (GlooCarriesBFloat16()) {
    EXPECT_EQ(CheckCommunication(o), "");
  } else {
    EXPECT_NE(CheckCommunication(o).find(
                  "--compression bf16 needs NCCL or LibTorch >= 2.2 for Gloo"),
              std::string::npos);
    RunRanks(2, [&](Collectives& c) {
      FixedGradParams f = MakeParams({{4}});
      EXPECT_THROW(GradientReducer(&c, f.params, Options("bf16")),
                   std::invalid_argument);
    });
  }
  o.args.compression = Compression::kFp16;
  EXPECT_EQ(CheckCommunication(o), "");
}

TEST(GradientReducer, Bf16CompressionErrorIsBoundedOverGloo) {
  if (!GlooCarriesBFloat16()) GTEST_SKIP() << "Gloo has no bfloat16 here";
  CompressedRun bf16 = RunCompressed(kShapes, Options("bf16"));
  for (int r = 0; r < 2; ++r) {
    const double error = RelativeError(bf16.out[r], bf16.want);
    EXPECT_LT(error, 1e-2) << "rank " << r;  // 8 bits of mantissa
    EXPECT_GT(error, 1e-4);                  // it really went through bfloat16
  }
  EXPECT_TRUE(torch::equal(bf16.out[0], bf16.out[1]));
  EXPECT_EQ(bf16.stats[0].bytes, kCountBytes + kNumel * 2);
}

TEST(Collectives, ReportsItsBackend) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  EXPECT_EQ(Collectives(store, 0, 1, milliseconds(1000)).backend(),
            DistBackend::kGloo);
  // A world of one builds no group: NCCL is only named, so this runs anywhere.
  EXPECT_EQ(Collectives(store, 0, 1, milliseconds(1000), DistBackend::kNccl)
                .backend(),
            DistBackend::kNccl);
}

TEST(StallWatchdog, FiresOnceWhenBeatsStopAndNamesThePhase) {
  std::mutex mu;
  std::vector<std::string> reasons;
  StallWatchdog dog(milliseconds(400), [&](const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu);
    reasons.push_back(reason);
  });
  dog.SetPhase("training step");
  const auto start = std::chrono::steady_clock::now();
  // Beating for longer than the timeout keeps it quiet.
  while (std::chrono::steady_clock::now() - start < milliseconds(1000)) {
    dog.Beat();
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_FALSE(dog.fired());
  dog.SetPhase("gradient all-reduce");
  std::this_thread::sleep_for(milliseconds(1200));
  EXPECT_TRUE(dog.fired());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0],
            "watchdog: no progress for 0.4 s (stuck in gradient all-reduce)");
}

TEST(StallWatchdog, ZeroTimeoutNeverFires) {
  bool fired = false;
  {
    StallWatchdog dog(milliseconds(0),
                      [&](const std::string&) { fired = true; });
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_FALSE(dog.fired());
  }
  EXPECT_FALSE(fired);
}

}  // namespace
}  // namespace hpcai500::worker
