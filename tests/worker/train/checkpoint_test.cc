// Checkpoints: exact round trips, atomic writes, corrupt files, and which
// file a resume picks.
#include "worker/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/worker/distributed/rank_threads.h"
#include "tests/worker/test_util.h"
#include "worker/train/precision.h"

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;
using ::hpcai500::testing::ReadFile;
using ::hpcai500::testing::ScratchDir;

// A model with parameters and buffers, SGD with momentum, and a scaler.
struct Trained {
  explicit Trained(uint64_t seed) {
    torch::manual_seed(seed);
    model = torch::nn::Sequential(torch::nn::Linear(4, 3),
                                  torch::nn::BatchNorm1d(3));
    optimizer = std::make_unique<torch::optim::SGD>(
        model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  }
  void Train(int steps) {
    for (int i = 0; i < steps; ++i) {
      optimizer->zero_grad();
      model->forward(torch::randn({8, 4})).pow(2).sum().backward();
      optimizer->step();
    }
  }
  TrainingState State(int64_t epoch) {
    return TrainingState{model.ptr().get(), optimizer.get(), &scaler, epoch,
                         "config=test world_size=1"};
  }
  std::vector<torch::Tensor> Momentum() {
    std::vector<torch::Tensor> out;
    for (const torch::Tensor& p : model->parameters()) {
      auto& state = static_cast<torch::optim::SGDParamState&>(
          *optimizer->state().at(p.unsafeGetTensorImpl()));
      out.push_back(state.momentum_buffer());
    }
    return out;
  }

  torch::nn::Sequential model{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer;
  LossScaler scaler{/*enabled=*/true};
};

class CheckpointTest : public ::testing::Test {
 protected:
  std::vector<std::string> FilesInDir() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  const ScratchDir scratch_ = ScratchDir::ForCurrentTest("checkpoint");
  const std::string dir_ = scratch_.path();
};

void ExpectLoadFailsNaming(const std::string& path, TrainingState state,
                           const std::string& also) {
  try {
    LoadCheckpoint(path, &state);
    FAIL() << "loading " << path << " succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(also), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, RoundTripRestoresParametersMomentumEpochAndRngExactly) {
  Trained saved(/*seed=*/1);
  saved.Train(3);
  saved.scaler.Update(/*found_non_finite=*/true);
  saved.scaler.Update(false);
  const std::string path = SaveCheckpoint(dir_, saved.State(/*epoch=*/4));
  EXPECT_EQ(path, CheckpointPath(dir_, 4));
  const torch::Tensor next_draw = torch::rand({5});

  Trained restored(/*seed=*/2);
  restored.Train(1);  // different parameters and momentum
  TrainingState state = restored.State(/*epoch=*/0);
  LoadCheckpoint(path, &state);
  EXPECT_EQ(state.epoch, 4);
  EXPECT_TRUE(torch::equal(torch::rand({5}), next_draw));  // RNG restored

  const auto a = saved.model->named_parameters();
  const auto b = restored.model->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].value(), b[i].value())) << a[i].key();
  }
  const auto buffers_a = saved.model->named_buffers();
  const auto buffers_b = restored.model->named_buffers();
  for (size_t i = 0; i < buffers_a.size(); ++i) {
    EXPECT_TRUE(torch::equal(buffers_a[i].value(), buffers_b[i].value()))
        << buffers_a[i].key();
  }
  const auto momentum_a = saved.Momentum();
  const auto momentum_b = restored.Momentum();
  ASSERT_EQ(momentum_a.size(), momentum_b.size());
  for (size_t i = 0; i < momentum_a.size(); ++i) {
    EXPECT_TRUE(torch::equal(momentum_a[i], momentum_b[i])) << i;
  }
  EXPECT_EQ(restored.scaler.scale(), 32768.0);
  EXPECT_EQ(restored.scaler.state().growth_tracker, 1);

  // Training on from either gives the same parameters, bit for bit.
  torch::manual_seed(9);
  saved.Train(2);
  torch::manual_seed(9);
  restored.Train(2);
  EXPECT_EQ(ParameterChecksum(*saved.model),
            ParameterChecksum(*restored.model));
}

TEST_F(CheckpointTest, TruncatedFileIsAnErrorNamingTheFile) {
  Trained run(1);
  const std::string path = SaveCheckpoint(dir_, run.State(1));
  fs::resize_file(path, fs::file_size(path) / 2);
  ExpectLoadFailsNaming(path, run.State(0), "truncated or corrupt");
}

TEST_F(CheckpointTest, GarbageAndMissingFilesAreErrorsNamingTheFile) {
  Trained run(1);
  const std::string garbage = dir_ + "/checkpoint-epoch-000001.pt";
  std::ofstream(garbage) << "not a checkpoint";
  ExpectLoadFailsNaming(garbage, run.State(0), "checkpoint");
  ExpectLoadFailsNaming(dir_ + "/absent.pt", run.State(0), "checkpoint");
}

TEST_F(CheckpointTest, ACheckpointOfAnotherRunShapeIsRefused) {
  Trained run(1);
  const std::string path = SaveCheckpoint(dir_, run.State(1));
  TrainingState other = run.State(0);
  other.fingerprint = "config=test world_size=2";
  ExpectLoadFailsNaming(path, other, "world_size=2");
}

TEST_F(CheckpointTest, AnotherModelIsRefusedNamingTheParameter) {
  Trained run(1);
  const std::string path = SaveCheckpoint(dir_, run.State(1));
  torch::nn::Sequential wider(torch::nn::Linear(4, 5),
                              torch::nn::BatchNorm1d(5));
  torch::optim::SGD optimizer(wider->parameters(), torch::optim::SGDOptions(1));
  LossScaler scaler(false);
  TrainingState state{wider.ptr().get(), &optimizer, &scaler, 0,
                      "config=test world_size=1"};
  ExpectLoadFailsNaming(path, state, "0.weight");
}

TEST_F(CheckpointTest, AtomicWriteShowsNoPartialFileUnderTheFinalName) {
  const std::string path = dir_ + "/file";
  WriteFileAtomically(path, [&](const ByteSink& sink) {
    sink("hello ", 6);
    EXPECT_FALSE(fs::exists(path));  // only the temporary file so far
    sink("world", 5);
  });
  EXPECT_EQ(ReadFile(path), "hello world");
  EXPECT_EQ(FilesInDir(), std::vector<std::string>({"file"}));

  // A writer that fails half way leaves the old content and no temporary.
  try {
    WriteFileAtomically(path, [](const ByteSink& sink) {
      sink("partial", 7);
      throw std::runtime_error("disk on fire");
    });
    FAIL() << "the failure was swallowed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("disk on fire"), std::string::npos);
  }
  EXPECT_EQ(ReadFile(path), "hello world");
  EXPECT_EQ(FilesInDir(), std::vector<std::string>({"file"}));
}

TEST_F(CheckpointTest, AtomicWriteIntoAMissingFolderFailsNamingTheFile) {
  const std::string path = dir_ + "/no/such/folder/file";
  EXPECT_THROW(
      {
        try {
          WriteFileAtomically(path, [](const ByteSink& sink) { sink("x", 1); });
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
}

TEST_F(CheckpointTest, NewestPicksTheHighestEpochAndIgnoresOtherFiles) {
  EXPECT_EQ(NewestCheckpoint(dir_), std::nullopt);
  EXPECT_EQ(NewestCheckpoint(dir_ + "/absent"), std::nullopt);
  Trained run(1);
  SaveCheckpoint(dir_, run.State(9), /*keep=*/5);
  SaveCheckpoint(dir_, run.State(10), /*keep=*/5);
  std::ofstream(dir_ + "/.checkpoint-epoch-000011.pt.tmp-123") << "partial";
  std::ofstream(dir_ + "/checkpoint-epoch-00001x.pt") << "other";
  EXPECT_EQ(NewestCheckpoint(dir_), CheckpointPath(dir_, 10));
}

TEST_F(CheckpointTest, SaveKeepsOnlyTheNewestCheckpoints) {
  Trained run(1);
  for (int epoch = 1; epoch <= 4; ++epoch) {
    SaveCheckpoint(dir_, run.State(epoch), /*keep=*/2);
  }
  EXPECT_EQ(FilesInDir(),
            std::vector<std::string>(
                {"checkpoint-epoch-000003.pt", "checkpoint-epoch-000004.pt"}));
}

// Rank r's gradient of step s for parameters of `shapes`, fixed by (r, s).
// Its own generator: the ranks are threads, and the global one is shared.
std::vector<torch::Tensor> Gradients(
    const std::vector<std::vector<int64_t>>& shapes, int rank, int step) {
  at::Generator generator = at::detail::createCPUGenerator(1000 * step + rank);
  std::vector<torch::Tensor> out;
  for (const auto& shape : shapes) {
    out.push_back(at::randn(shape, generator, torch::kFloat32));
  }
  return out;
}

// One step of `reducer` over `params` whose local gradient is `grads`;
// returns the averaged gradients it wrote back, flattened.
torch::Tensor Step(GradientReducer& reducer,
                   const std::vector<torch::Tensor>& params,
                   const std::vector<torch::Tensor>& grads) {
  for (const auto& p : params) {
    if (p.grad().defined()) p.grad().zero_();
  }
  reducer.BeginStep(4);
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < params.size(); ++i) {
    loss = loss + (params[i] * grads[i]).sum();
  }
  loss.backward();
  reducer.FinishStep();
  std::vector<torch::Tensor> flat;
  for (const auto& p : params) flat.push_back(p.grad().reshape(-1).clone());
  return torch::cat(flat);
}

std::vector<torch::Tensor> ZeroParams(
    const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<torch::Tensor> params;
  for (const auto& shape : shapes) {
    params.push_back(torch::zeros(shape).set_requires_grad(true));
  }
  return params;
}

TEST_F(CheckpointTest, PowerSgdStateOfEachRankSurvivesSaveAndLoad) {
  // A [24, 20] matrix is compressed, the bias is not. After three steps
  // (one of warm-up) each rank saves its part; a reducer restored from the
  // parts gives the next step's gradient bit for bit, one started afresh
  // does not (its residuals are zero and it would warm up again).
  const std::vector<std::vector<int64_t>> shapes = {{24, 20}, {24}};
  ReducerOptions options;
  options.compression = Compression::kPowerSgd;
  options.powersgd_rank = 2;
  options.powersgd_warmup_steps = 1;
  std::vector<torch::Tensor> direct(2), restored(2), fresh(2);
  testing::RunRanksOnThreads(
      {torch::kCPU, torch::kCPU}, DistBackend::kGloo,
      std::chrono::milliseconds(30000), [&](Collectives& c) {
        const int rank = c.rank();
        const std::vector<torch::Tensor> params = ZeroParams(shapes);
        GradientReducer saved(&c, params, options);
        for (int step = 0; step < 3; ++step) {
          Step(saved, params, Gradients(shapes, rank, step));
        }
        SavePowerSgdPart(dir_, /*epoch=*/1, rank, saved.powersgd_state());
        direct[rank] = Step(saved, params, Gradients(shapes, rank, 3));

        const std::vector<torch::Tensor> again = ZeroParams(shapes);
        GradientReducer loaded(&c, again, options);
        loaded.RestorePowerSgd(
            LoadPowerSgdPart(CheckpointPartPath(dir_, 1, rank)));
        restored[rank] = Step(loaded, again, Gradients(shapes, rank, 3));

        const std::vector<torch::Tensor> other = ZeroParams(shapes);
        GradientReducer afresh(&c, other, options);
        fresh[rank] = Step(afresh, other, Gradients(shapes, rank, 3));
      });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(torch::equal(restored[rank], direct[rank])) << "rank " << rank;
    EXPECT_FALSE(torch::allclose(fresh[rank], direct[rank])) << "rank " << rank;
  }
  // Each rank's residuals are its own: the two parts differ.
  EXPECT_NE(ReadFile(CheckpointPartPath(dir_, 1, 0)),
            ReadFile(CheckpointPartPath(dir_, 1, 1)));
  EXPECT_EQ(FilesInDir(),
            std::vector<std::string>({"checkpoint-epoch-000001.rank-0.pt",
                                      "checkpoint-epoch-000001.rank-1.pt"}));
}

TEST_F(CheckpointTest, AMissingPowerSgdPartIsRefusedNamingIt) {
  const std::string part = CheckpointPartPath(dir_, 3, 1);
  try {
    LoadPowerSgdPart(part);
    FAIL() << "loading " << part << " succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no PowerSGD state"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CheckpointTest, PartsAreKeptPerRankAndNeverTakenForACheckpoint) {
  PowerSgdState state;
  state.steps = 5;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    SavePowerSgdPart(dir_, epoch, /*rank=*/0, state, /*keep=*/2);
  }
  SavePowerSgdPart(dir_, 1, /*rank=*/1, state, /*keep=*/2);
  EXPECT_EQ(FilesInDir(),
            std::vector<std::string>({"checkpoint-epoch-000001.rank-1.pt",
                                      "checkpoint-epoch-000002.rank-0.pt",
                                      "checkpoint-epoch-000003.rank-0.pt"}));
  EXPECT_EQ(NewestCheckpoint(dir_), std::nullopt);
  EXPECT_EQ(LoadPowerSgdPart(CheckpointPartPath(dir_, 3, 0)).steps, 5);
}

}  // namespace
}  // namespace hpcai500::worker
