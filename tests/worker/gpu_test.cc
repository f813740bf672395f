// Tests that need an NVIDIA GPU (ctest label gpu; bench/gpu.sh runs them).
// The real worker on CUDA: bf16 and loss-scaled fp16 runs reaching their
// epochs, a checkpoint written on CUDA and resumed, LibTorch warnings inside
// a bf16 step that do not end the run, two ranks sharing one GPU over Gloo
// with CUDA tensors (every gradient compression), two ranks over NCCL
// where two GPUs are, and --cuda-graph runs (bf16 against the plain run's
// loss curve, fp16 with its loss scale). In-process: the gradient reducer
// all-reduces CUDA buckets over Gloo, and NCCL carries the CPU tensors of the
// model-state collectives through the device. Each test skips, saying why,
// where LibTorch sees no GPU or fewer than it needs.
//
// HPCAI500_GPU_TESTS_ON_CPU=1 runs the worker cases that can run on the CPU
// there instead (not fp16, not NCCL): a check of the tests themselves on a
// machine without a GPU.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/worker/distributed/rank_threads.h"
#include "tests/worker/gpu_skip.h"
#include "tests/worker/loss_curves.h"
#include "tests/worker/test_util.h"
#include "worker/distributed/distributed.h"

namespace hpcai500::worker {
namespace {

using hpcai500::testing::FreePort;
using hpcai500::testing::ReadEvents;
using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;
using hpcai500::testing::Subprocess;
using hpcai500::testing::SubprocessOptions;
using hpcai500::testing::WithKey;
using hpcai500::testing::WithVariables;
using nlohmann::json;
using std::chrono::milliseconds;

using ::hpcai500::testing::kWorker;
// Generous: a case takes seconds on a GPU, minutes only when it hangs.
constexpr auto kRunLimit = std::chrono::minutes(3);

using ::hpcai500::testing::GpuShortage;
using ::hpcai500::testing::OnCpuInstead;

// The device the worker cases train on: cuda, or cpu for a check of the
// tests without a GPU.
std::string WorkerDevice() { return OnCpuInstead() ? "cpu" : "cuda"; }

// A finished worker process: exit code, events file, stderr.
struct WorkerRun {
  int exit_code = -1;
  std::vector<json> events;
  std::string stderr_text;

  // The status of the run's run_stop ("" without one).
  std::string Status() const {
    const std::vector<json> stops = WithKey(events, "run_stop");
    if (stops.size() != 1) return "";
    return stops[0]["metadata"].value("status", "");
  }
  // hpcai500_param_checksum ("" without one).
  std::string Checksum() const {
    const std::vector<json> sums = WithKey(events, "hpcai500_param_checksum");
    return sums.size() == 1 ? sums[0]["value"].get<std::string>() : "";
  }
  // The member `name` of every epoch's hpcai500_epoch_stats.
  std::vector<json> EpochStat(const std::string& name) const {
    std::vector<json> values;
    for (const json& e : WithKey(events, "hpcai500_epoch_stats")) {
      values.push_back(e["value"].value(name, json()));
    }
    return values;
  }
};

class CudaWorkerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) scratch_.Keep();
  }

  // `more` after the workload, config, device, events file and two threads.
  std::vector<std::string> Args(const std::string& name,
                                const std::vector<std::string>& more) const {
    std::vector<std::string> args = {kWorker,
                                     "--workload",
                                     "image_classification",
                                     "--config",
                                     config_,
                                     "--data",
                                     "synthetic",
                                     "--device",
                                     WorkerDevice(),
                                     "--threads",
                                     "2",
                                     "--events-file",
                                     Path(name) + ".events"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // Starts one worker named `name` with `more` flags and `variables`
  // ("NAME=value") over this process's environment.
  std::unique_ptr<Subprocess> Start(const std::string& name,
                                    const std::vector<std::string>& more,
                                    const std::vector<std::string>& variables) {
    SubprocessOptions o;
    o.argv = Args(name, more);
    o.env =
        WithVariables(hpcai500::testing::SingleRankEnvironment(), variables);
    o.stdout_path = Path(name) + ".stdout";
    o.stderr_path = Path(name) + ".stderr";
    return std::make_unique<Subprocess>(o);
  }

  WorkerRun Finish(const std::string& name, Subprocess& process) const {
    WorkerRun run;
    run.exit_code = process.Wait(kRunLimit);
    run.events = ReadEvents(Path(name) + ".events");
    run.stderr_text = ReadFile(Path(name) + ".stderr");
    return run;
  }

  // One rank alone.
  WorkerRun RunAlone(const std::string& name,
                     const std::vector<std::string>& more,
                     const std::vector<std::string>& variables = {}) {
    std::unique_ptr<Subprocess> process = Start(name, more, variables);
    return Finish(name, *process);
  }

  // Two ranks on loopback (torchrun's variables); rank r's GPU is
  // `visible[r]` (CUDA_VISIBLE_DEVICES), all of them when empty.
  std::vector<WorkerRun> RunTwoRanks(const std::string& name,
                                     const std::vector<std::string>& more,
                                     const std::vector<std::string>& visible) {
    const int port = FreePort();
    EXPECT_GT(port, 0);
    std::vector<std::unique_ptr<Subprocess>> ranks;
    for (int r = 0; r < 2; ++r) {
      std::vector<std::string> variables = {
          "RANK=" + std::to_string(r),
          "WORLD_SIZE=2",
          "LOCAL_RANK=" + std::to_string(r),
          "LOCAL_WORLD_SIZE=2",
          "MASTER_ADDR=127.0.0.1",
          "MASTER_PORT=" + std::to_string(port)};
      if (!visible.empty()) {
        variables.push_back("CUDA_VISIBLE_DEVICES=" + visible[r]);
      }
      ranks.push_back(
          Start(name + "-rank" + std::to_string(r), more, variables));
    }
    std::vector<WorkerRun> runs;
    for (int r = 0; r < 2; ++r) {
      runs.push_back(Finish(name + "-rank" + std::to_string(r), *ranks[r]));
    }
    return runs;
  }

  // A bf16 run of `common` plus `flag` (a fast path) beside the plain run
  // of `common`, from the same seed: both reach their `epochs` of `samples`,
  // run_start names `fast_path` in the one and no fast path in the other,
  // and the epochs' mean losses follow the plain run's
  // (tests/worker/loss_curves.h): the first epoch, a few steps from the
  // same weights, within 2%; the later ones, where bf16's different
  // rounding has had steps to grow, within 10%.
  void ExpectFollowsThePlainRun(const std::vector<std::string>& common,
                                const std::string& flag,
                                const std::string& fast_path, int epochs,
                                int64_t samples);

  std::string Path(const std::string& name) const {
    return scratch_.path() + "/" + name;
  }

  ScratchDir scratch_ = ScratchDir::ForCurrentTest("gpu");
  // ResNet-50 v1.5 on random 224x224 images: the IC model on the device.
  std::string config_ = "synthetic_resnet50";
};

// Exit 0 after run_stop success, with `epochs` epochs of `samples` each.
void ExpectReachedItsEpochs(const WorkerRun& run, int epochs, int64_t samples) {
  EXPECT_EQ(run.exit_code, 0) << run.stderr_text;
  EXPECT_EQ(run.Status(), "success") << run.stderr_text;
  EXPECT_EQ(WithKey(run.events, "epoch_stop").size(),
            static_cast<size_t>(epochs));
  for (const json& n : run.EpochStat("samples")) EXPECT_EQ(n, samples);
  for (const json& loss : run.EpochStat("train_loss")) {
    ASSERT_TRUE(loss.is_number()) << loss;
    EXPECT_TRUE(std::isfinite(loss.get<double>())) << loss;
    EXPECT_GT(loss.get<double>(), 0.0);
  }
  EXPECT_EQ(run.Checksum().size(), 16u);
}

// The scaler of a two-epoch fp16 run of `steps` steps in all ran: it starts
// at 2^16 and only halves on an overflow (too few steps to grow), so it ends
// at 2^16 / 2^skips, and not every step overflowed.
void ExpectScaleHalvedPerSkip(const WorkerRun& run, int64_t steps) {
  const std::vector<json> scales = run.EpochStat("loss_scale");
  const std::vector<json> skipped = run.EpochStat("skipped_steps");
  ASSERT_EQ(scales.size(), 2u);
  ASSERT_EQ(skipped.size(), 2u);
  const int64_t skips = skipped[0].get<int64_t>() + skipped[1].get<int64_t>();
  EXPECT_LT(skips, steps) << "every step overflowed";
  EXPECT_DOUBLE_EQ(scales[1].get<double>(),
                   65536.0 / static_cast<double>(int64_t{1} << skips));
}

// The train_loss of each epoch, as numbers.
std::vector<double> EpochLosses(const WorkerRun& run) {
  std::vector<double> losses;
  for (const json& loss : run.EpochStat("train_loss")) {
    losses.push_back(loss.is_number() ? loss.get<double>() : NAN);
  }
  return losses;
}

void CudaWorkerTest::ExpectFollowsThePlainRun(
    const std::vector<std::string>& common, const std::string& flag,
    const std::string& fast_path, int epochs, int64_t samples) {
  std::vector<std::string> with_flag = common;
  with_flag.push_back(flag);
  const WorkerRun plain = RunAlone("plain", common);
  const WorkerRun fast = RunAlone(fast_path, with_flag);
  ExpectReachedItsEpochs(plain, epochs, samples);
  ExpectReachedItsEpochs(fast, epochs, samples);
  const std::vector<json> starts = WithKey(fast.events, "run_start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0]["metadata"].value("fast_paths", ""), fast_path);
  const std::vector<json> plain_starts = WithKey(plain.events, "run_start");
  ASSERT_EQ(plain_starts.size(), 1u);
  EXPECT_FALSE(plain_starts[0]["metadata"].contains("fast_paths"));
  hpcai500::testing::CurveTolerance tolerance;
  tolerance.tight_points = 1;
  hpcai500::testing::ExpectFollows(EpochLosses(plain), EpochLosses(fast),
                                   tolerance, "epoch");
}

TEST_F(CudaWorkerTest, Bf16RunReachesItsEpochs) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/true);
  const WorkerRun run =
      RunAlone("bf16", {"--precision", "bf16", "--batch-size", "16", "--epochs",
                        "2", "--steps-per-epoch", "4"});
  ExpectReachedItsEpochs(run, 2, 64);
  // bf16 needs no loss scaling.
  for (const json& scale : run.EpochStat("loss_scale")) EXPECT_EQ(scale, 1.0);
}

TEST_F(CudaWorkerTest, Fp16LossScaledRunReachesItsEpochs) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false);  // fp16 autocast is CUDA's only
  const WorkerRun run =
      RunAlone("fp16", {"--precision", "fp16", "--batch-size", "16", "--epochs",
                        "2", "--steps-per-epoch", "4"});
  ExpectReachedItsEpochs(run, 2, 64);
  ExpectScaleHalvedPerSkip(run, /*steps=*/8);
}

// --fused-bn (worker/kernels) against the plain run (ExpectFollowsThePlainRun):
// 20 steps in four epochs, so that the first epoch is the first 5 steps
// (tests/worker/kernels holds the kernels themselves to cuDNN).
TEST_F(CudaWorkerTest, FusedBnRunRecordsItAndFollowsThePlainLosses) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false);  // --fused-bn needs --device cuda
  ExpectFollowsThePlainRun(
      {"--precision", "bf16", "--batch-size", "32", "--epochs", "4", "--seed",
       "5", "--steps-per-epoch", "5"},
      "--fused-bn", "fused_bn", /*epochs=*/4,
      /*samples=*/160);
}

// Epoch 1 checkpointed on CUDA; resumed with the same budget it trains
// nothing and ends with the very parameters it loaded; resumed with one
// more epoch it trains only that one.
TEST_F(CudaWorkerTest, CheckpointOnCudaThenResumeContinues) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/true);
  const std::string checkpoints = Path("checkpoints");
  const std::vector<std::string> common = {
      "--precision",       "bf16", "--batch-size",     "16",
      "--steps-per-epoch", "3",    "--checkpoint-dir", checkpoints};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const WorkerRun first = RunAlone("first", with({"--epochs", "1"}));
  ExpectReachedItsEpochs(first, 1, 48);
  ASSERT_TRUE(
      std::filesystem::exists(checkpoints + "/checkpoint-epoch-000001.pt"));

  const WorkerRun reloaded =
      RunAlone("reloaded", with({"--epochs", "1", "--resume"}));
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.stderr_text;
  ASSERT_EQ(WithKey(reloaded.events, "hpcai500_resume").size(), 1u);
  EXPECT_EQ(WithKey(reloaded.events, "hpcai500_resume")[0]["value"], 1);
  EXPECT_TRUE(WithKey(reloaded.events, "epoch_start").empty());
  EXPECT_EQ(reloaded.Checksum(), first.Checksum())
      << "the parameters loaded on CUDA differ from those saved";

  const WorkerRun resumed =
      RunAlone("resumed", with({"--epochs", "2", "--resume"}));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.stderr_text;
  EXPECT_EQ(resumed.Status(), "success");
  const std::vector<json> starts = WithKey(resumed.events, "epoch_start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0]["metadata"]["epoch_num"], 2);
  EXPECT_NE(resumed.Checksum(), first.Checksum());
  EXPECT_TRUE(
      std::filesystem::exists(checkpoints + "/checkpoint-epoch-000002.pt"));
}

// HPCAI500_TEST_TORCH_WARN=1 (worker/train/test_warnings.h): the first two
// steps of each epoch warn inside bf16 autocast, from inside LibTorch and
// from the worker's own TORCH_WARN; the run goes on.
TEST_F(CudaWorkerTest, TorchWarningsInsideABf16StepDoNotEndTheRun) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/true);
  const WorkerRun run = RunAlone("warn",
                                 {"--precision", "bf16", "--batch-size", "8",
                                  "--epochs", "2", "--steps-per-epoch", "3"},
                                 {"HPCAI500_TEST_TORCH_WARN=1"});
  ExpectReachedItsEpochs(run, 2, 24);
  const std::string& err = run.stderr_text;
  for (const std::string& said :
       {"hpcai500 test warning: epoch 1 step 0 on " + WorkerDevice(),
        "hpcai500 test warning: epoch 2 step 1 on " + WorkerDevice(),
        std::string("was resized since it had shape [2]"),
        std::string("torch.meshgrid")}) {
    EXPECT_NE(err.find(said), std::string::npos) << said << " in:\n" << err;
  }
}

// Both ranks on the one visible GPU, Gloo all-reducing the CUDA buckets:
// every compression ends with identical parameters on both ranks, and
// fp16 halves (PowerSGD shrinks far more) what goes on the wire.
TEST_F(CudaWorkerTest, TwoRanksShareOneGpuOverGlooWithEachCompression) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/true);
  config_ = "cifar10";  // ResNet-18 on 32x32: the wire, not the model
  std::map<std::string, int64_t> bytes;
  for (const std::string compression : {"none", "fp16", "powersgd"}) {
    const std::vector<WorkerRun> ranks = RunTwoRanks(
        "gloo-" + compression,
        {"--dist-backend", "gloo", "--compression", compression,
         "--powersgd-warmup-steps", "1", "--precision", "bf16", "--batch-size",
         "8", "--epochs", "1", "--steps-per-epoch", "4"},
        {"0", "0"});
    for (const WorkerRun& run : ranks) ExpectReachedItsEpochs(run, 1, 32);
    EXPECT_EQ(ranks[0].Checksum(), ranks[1].Checksum()) << compression;
    ASSERT_EQ(ranks[0].EpochStat("comm_bytes").size(), 1u);
    bytes[compression] = ranks[0].EpochStat("comm_bytes")[0].get<int64_t>();
  }
  EXPECT_GT(bytes["none"], 0);
  EXPECT_LT(bytes["fp16"], bytes["none"] * 0.51);
  EXPECT_GT(bytes["fp16"], bytes["none"] * 0.49);
  // One warm-up step whole, then three low-rank ones.
  EXPECT_LT(bytes["powersgd"], bytes["none"] * 0.5);
}

TEST_F(CudaWorkerTest, TwoRanksOverNcclOnTwoGpus) {
  SKIP_UNLESS_GPUS(2, /*cpu_too=*/false);
  config_ = "cifar10";
  const std::vector<WorkerRun> ranks = RunTwoRanks(
      "nccl",
      {"--dist-backend", "nccl", "--compression", "fp16", "--precision", "bf16",
       "--batch-size", "8", "--epochs", "2", "--steps-per-epoch", "3"},
      {"0", "1"});
  for (const WorkerRun& run : ranks) ExpectReachedItsEpochs(run, 2, 24);
  EXPECT_EQ(ranks[0].Checksum(), ranks[1].Checksum());
  // The evaluation's all-reduced accuracy is the same on both ranks.
  const std::vector<json> a = WithKey(ranks[0].events, "eval_accuracy");
  const std::vector<json> b = WithKey(ranks[1].events, "eval_accuracy");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(a[1]["value"], b[1]["value"]);
}

// Two ranks that each see every GPU (mpirun and srun launches, a node
// without per-rank CUDA_VISIBLE_DEVICES) train on their own: rank 1 makes
// cuda:1 current before anything touches CUDA, so its graph capture (which
// reads the current device), its NCCL communicator and, on resume, its SGD
// momentum (read onto the CPU, then moved to its parameters' device) are all
// on cuda:1. Each of these failed on rank 1 when it ran on cuda:0's context.
TEST_F(CudaWorkerTest, TwoRanksSeeingEveryGpuCaptureAndResumeOnTheirOwn) {
  SKIP_UNLESS_GPUS(2, /*cpu_too=*/false);
  config_ = "cifar10";
  const std::string checkpoints = Path("checkpoints");
  const std::vector<std::string> common = {"--dist-backend",
                                           "nccl",
                                           "--precision",
                                           "bf16",
                                           "--cuda-graph=true",
                                           "--batch-size",
                                           "8",
                                           "--steps-per-epoch",
                                           "6",
                                           "--checkpoint-dir",
                                           checkpoints};
  std::vector<std::string> first = common;
  first.insert(first.end(), {"--epochs", "1"});
  for (const WorkerRun& run : RunTwoRanks("all-visible", first, {})) {
    ExpectReachedItsEpochs(run, 1, 48);
  }
  std::vector<std::string> resumed = common;
  resumed.insert(resumed.end(), {"--epochs", "2", "--resume"});
  const std::vector<WorkerRun> ranks =
      RunTwoRanks("all-visible-resumed", resumed, {});
  for (const WorkerRun& run : ranks) {
    ExpectReachedItsEpochs(run, 1, 48);  // epoch 2 only
    ASSERT_EQ(WithKey(run.events, "hpcai500_resume").size(), 1u);
    EXPECT_EQ(WithKey(run.events, "hpcai500_resume")[0]["value"], 1);
  }
  EXPECT_EQ(ranks[0].Checksum(), ranks[1].Checksum());
}

// ---- --cuda-graph (issue 25) ----------------------------------------------

// The step captured once and replayed (3 eager steps, the capture, then
// replays: epochs 2 and 3 are all replays) against the plain run
// (ExpectFollowsThePlainRun; bf16: the replays run the same kernels,
// cuDNN's backward may accumulate in another order).
TEST_F(CudaWorkerTest, CudaGraphRunFollowsThePlainRunsLossCurve) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false);
  ExpectFollowsThePlainRun({"--precision", "bf16", "--batch-size", "16",
                            "--epochs", "3", "--steps-per-epoch", "4"},
                           "--cuda-graph=true", "cuda_graph", /*epochs=*/3,
                           /*samples=*/64);
}

// fp16 under the graph: the scale, its growth count and the skip decision
// live on the device and come back once an epoch, as the plain run's do.
TEST_F(CudaWorkerTest, CudaGraphFp16RunKeepsItsLossScaleOnTheDevice) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false);
  const WorkerRun run = RunAlone(
      "graph-fp16", {"--precision", "fp16", "--batch-size", "16", "--epochs",
                     "2", "--steps-per-epoch", "6", "--cuda-graph=true"});
  ExpectReachedItsEpochs(run, 2, 96);
  ExpectScaleHalvedPerSkip(run, /*steps=*/12);
}

// ---- In-process: the collectives on CUDA tensors ---------------------------

// Runs fn(collectives) on one thread per entry of `devices`, rank r on
// `devices[r]` over `backend`; rethrows the first exception any threw.
void RunRanks(DistBackend backend, const std::vector<torch::Device>& devices,
              const std::function<void(Collectives&)>& fn) {
  testing::RunRanksOnThreads(devices, backend, milliseconds(60000), fn);
}

// Two ranks' gradients of a conv-shaped and a bias parameter on `devices`,
// reduced with `compression`; returns each rank's averaged gradient (on the
// CPU) and the exact mean. Rank r's conv gradient is a b_r^T (as a 64 x 288
// matrix): the mean has rank 1, which rank-1 PowerSGD carries exactly.
struct Reduced {
  std::vector<torch::Tensor> out{2};
  torch::Tensor want;
};

Reduced ReduceOn(DistBackend backend, const std::vector<torch::Device>& devices,
                 Compression compression) {
  const std::vector<std::vector<int64_t>> shapes = {{64, 32, 3, 3}, {64}};
  torch::manual_seed(7);
  const torch::Tensor a = torch::randn({64, 1});
  std::vector<std::vector<torch::Tensor>> grads(2);
  for (auto& g : grads) {
    g.push_back(a.mm(torch::randn({1, 288})).view(shapes[0]));
    g.push_back(torch::randn(shapes[1]));
  }
  Reduced reduced;
  std::vector<torch::Tensor> mean;
  for (size_t i = 0; i < shapes.size(); ++i) {
    mean.push_back(((grads[0][i] + grads[1][i]) / 2).reshape(-1));
  }
  reduced.want = torch::cat(mean);
  RunRanks(backend, devices, [&](Collectives& c) {
    const torch::Device device = devices[c.rank()];
    std::vector<torch::Tensor> params;
    for (const auto& shape : shapes) {
      params.push_back(torch::zeros(shape, torch::TensorOptions(device))
                           .set_requires_grad(true));
    }
    ReducerOptions options;
    options.compression = compression;
    options.powersgd_rank = 1;
    GradientReducer reducer(&c, params, options);
    reducer.BeginStep(4);
    torch::Tensor loss = torch::zeros({}, torch::TensorOptions(device));
    for (size_t i = 0; i < params.size(); ++i) {
      loss = loss + (params[i] * grads[c.rank()][i].to(device)).sum();
    }
    loss.backward();
    reducer.FinishStep();
    std::vector<torch::Tensor> flat;
    for (const auto& p : params) {
      EXPECT_EQ(p.grad().device(), device);
      flat.push_back(p.grad().reshape(-1).cpu());
    }
    reduced.out[c.rank()] = torch::cat(flat);
  });
  return reduced;
}

double NormRelativeError(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).norm().item<double>() / want.norm().item<double>();
}

TEST(CudaCollectives, GlooReducesCudaBucketsOfOneSharedGpu) {
  SKIP_UNLESS_GPUS(1, /*cpu_too=*/false);
  const torch::Device gpu(torch::kCUDA, 0);
  const std::map<Compression, double> bound = {{Compression::kNone, 1e-6},
                                               {Compression::kFp16, 1e-3},
                                               {Compression::kBf16, 1e-2},
                                               {Compression::kPowerSgd, 1e-4}};
  for (const auto& [compression, limit] : bound) {
    const Reduced r = ReduceOn(DistBackend::kGloo, {gpu, gpu}, compression);
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_LT(NormRelativeError(r.out[rank], r.want), limit)
          << Name(compression) << " rank " << rank;
    }
    EXPECT_TRUE(torch::equal(r.out[0], r.out[1])) << Name(compression);
  }
}

TEST(CudaCollectives, NcclReducesBucketsAndCarriesCpuTensorsThroughTheGpu) {
  SKIP_UNLESS_GPUS(2, /*cpu_too=*/false);
  const std::vector<torch::Device> gpus = {torch::Device(torch::kCUDA, 0),
                                           torch::Device(torch::kCUDA, 1)};
  const Reduced r = ReduceOn(DistBackend::kNccl, gpus, Compression::kNone);
  EXPECT_LT(NormRelativeError(r.out[0], r.want), 1e-6);
  EXPECT_TRUE(torch::equal(r.out[0], r.out[1]));
  // The model-state collectives hand CPU tensors to NCCL.
  std::vector<torch::Tensor> sums(2), broadcasts(2);
  RunRanks(DistBackend::kNccl, gpus, [&](Collectives& c) {
    torch::Tensor count =
        torch::tensor({static_cast<double>(c.rank() + 1)}, torch::kFloat64);
    c.AllReduceSum(count);
    torch::Tensor state = torch::full({5}, 10.0 * (c.rank() + 1));
    c.BroadcastFromRank0(state);
    sums[c.rank()] = count;
    broadcasts[c.rank()] = state;
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(sums[rank].device().is_cpu());
    EXPECT_EQ(sums[rank].item<double>(), 3.0);
    EXPECT_TRUE(torch::equal(broadcasts[rank], torch::full({5}, 10.0)));
  }
}

}  // namespace
}  // namespace hpcai500::worker
