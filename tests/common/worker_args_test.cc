#include "common/worker_args.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace hpcai500 {
namespace {

WorkerArgs Required(std::string workload, std::string config) {
  WorkerArgs a;
  a.workload = std::move(workload);
  a.config = std::move(config);
  return a;
}

WorkerArgs EveryFieldSet() {
  WorkerArgs a;
  a.workload = "image_classification";
  a.config = "imagenet";
  a.epochs = 3;
  a.batch_size = 256;
  a.precision = Precision::kBf16;
  a.compression = Compression::kPowerSgd;
  a.device = Device::kCuda;
  a.dist_backend = DistBackend::kGloo;
  a.seed = 9007199254740993;  // above 2^53: must not pass through a double
  a.events_file = "/w/rank-0.events";
  a.threads = 12;
  a.data = "/data/imagenet";
  a.steps_per_epoch = 5;
  a.powersgd_rank = 4;
  a.powersgd_warmup_steps = 0;
  a.bucket_mb = 0.1;
  a.deterministic = true;
  a.checkpoint_dir = "/ck";
  a.resume = false;
  a.watchdog_seconds = 0;
  a.collective_timeout_seconds = 30;
  a.lease_file = "/w/lease";
  a.model = "resnet34";
  a.mllog_submission = MllogSubmission{"Acme", "box-8", "cloud"};
  return a;
}

TEST(WorkerArgs, ToArgvThenFromArgvGivesBackTheSameArgs) {
  for (const WorkerArgs& original :
       {EveryFieldSet(), Required("extreme_weather", "ewa_smoke")}) {
    WorkerArgs back;
    std::string error;
    ASSERT_EQ(WorkerArgs::FromArgv(original.ToArgv(), &back, &error),
              ArgvOutcome::kArgs)
        << error;
    EXPECT_EQ(back, original);
  }
}

TEST(WorkerArgs, ToArgvWritesOnlySetFieldsInTableOrder) {
  WorkerArgs a = Required("image_classification", "fashion_mnist_smoke");
  a.epochs = 3;
  a.precision = Precision::kFp32;
  a.device = Device::kCpu;
  a.dist_backend = DistBackend::kNccl;
  a.resume = true;
  a.checkpoint_dir = "/ck";
  a.deterministic = false;
  EXPECT_EQ(a.ToArgv(), (std::vector<std::string>{
                            "--workload", "image_classification", "--config",
                            "fashion_mnist_smoke", "--epochs", "3",
                            "--precision", "fp32", "--device", "cpu",
                            "--dist-backend", "nccl", "--deterministic=false",
                            "--checkpoint-dir", "/ck", "--resume"}));
}

TEST(WorkerArgs, EqualityComparesEveryField) {
  WorkerArgs a = EveryFieldSet();
  WorkerArgs b = a;
  EXPECT_EQ(a, b);
  b.mllog_submission->status = "onprem";
  EXPECT_NE(a, b);
  b = a;
  b.bucket_mb.reset();
  EXPECT_NE(a, b);
}

TEST(WorkerArgs, FromArgvReadsBothSyntaxesAndStandaloneBools) {
  WorkerArgs a;
  std::string error;
  ASSERT_EQ(WorkerArgs::FromArgv(
                {"--workload=w", "--config", "c", "--deterministic",
                 "--epochs=2", "--epochs", "4", "--compression=fp16"},
                &a, &error),
            ArgvOutcome::kArgs)
      << error;
  EXPECT_EQ(a.workload, "w");
  EXPECT_EQ(a.config, "c");
  EXPECT_EQ(a.deterministic, true);
  EXPECT_EQ(a.epochs, 4);  // the last one given
  EXPECT_EQ(a.compression, Compression::kFp16);
  EXPECT_FALSE(a.precision);
}

TEST(WorkerArgs, FromArgvRefusalsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--config", "c"}, "--workload"},
      {{"--workload", "w", "--config", "c", "--precision", "fp8"},
       "--precision: 'fp8' is not fp32, bf16 or fp16"},
      {{"--workload", "w", "--config", "c", "--device", "tpu"},
       "--device: 'tpu' is not cpu or cuda"},
      {{"--workload", "w", "--config", "c", "--dist-backend", "mpi"},
       "--dist-backend: 'mpi' is not gloo or nccl"},
      {{"--workload", "w", "--config", "c", "--bucket-mb", "0"},
       "--bucket-mb: '0' is not a number in (0, 65536]"},
      {{"--workload", "w", "--config", "c", "--threads", "0"},
       "--threads: '0' is not an integer in [1, 4096]"},
      {{"--workload", "w", "--config", "c", "--events-file="},
       "--events-file: empty path"},
      {{"--workload", "w", "--config", "c", "--epochs"},
       "flag --epochs needs a value"},
      {{"--workload", "w", "--config", "c", "stray"}, "'stray'"},
      {{"--workload", "w", "--config", "c", "--resume=true"},
       "--resume needs --checkpoint-dir"},
      {{"--workload", "w", "--config", "c", "--fused-bn"},
       "--fused-bn needs --device cuda"},
      {{"--workload", "w", "--config", "c", "--device", "cpu", "--cuda-graph"},
       "--cuda-graph needs --device cuda"},
      {{"--workload", "w", "--config", "c", "--gpu-decode=true"},
       "--gpu-decode needs --device cuda"},
  };
  for (const auto& [args, named] : cases) {
    WorkerArgs a;
    std::string error;
    EXPECT_EQ(WorkerArgs::FromArgv(args, &a, &error), ArgvOutcome::kError)
        << named;
    EXPECT_NE(error.find(named), std::string::npos)
        << "error '" << error << "' does not name " << named;
  }
}

TEST(WorkerArgs, FastPathsOnNamesTheTrueOnesInTableOrder) {
  WorkerArgs a;
  EXPECT_TRUE(a.FastPathsOn().empty());
  a.gpu_decode = true;
  a.fused_bn = true;
  a.cuda_graph = false;
  EXPECT_EQ(a.FastPathsOn(),
            std::vector<std::string>({"fused_bn", "gpu_decode"}));
  a.cuda_graph = true;
  EXPECT_EQ(a.FastPathsOn(),
            std::vector<std::string>({"fused_bn", "cuda_graph", "gpu_decode"}));
}

TEST(WorkerArgs, HelpWinsWhereverItStands) {
  WorkerArgs a;
  std::string error;
  EXPECT_EQ(WorkerArgs::FromArgv({"--epochs", "3", "-h"}, &a, &error),
            ArgvOutcome::kHelp);
}

TEST(WorkerArgs, FillDefaultsSetsOnlyWhatIsUnsetAndHasADefault) {
  WorkerArgs a = Required("image_classification", "fashion_mnist_smoke");
  a.seed = 7;
  a.FillDefaults();
  EXPECT_EQ(a.seed, 7);  // given: kept
  EXPECT_EQ(a.precision, Precision::kFp32);
  EXPECT_EQ(a.compression, Compression::kNone);
  EXPECT_EQ(a.device, Device::kCpu);
  EXPECT_EQ(a.powersgd_warmup_steps, 100);
  EXPECT_EQ(a.bucket_mb, 25);
  EXPECT_EQ(a.resume, false);
  EXPECT_EQ(a.watchdog_seconds, 300);
  // No default: the worker decides (dist_backend, threads) or none is meant.
  EXPECT_FALSE(a.dist_backend);
  EXPECT_FALSE(a.threads);
  EXPECT_FALSE(a.events_file);
  EXPECT_FALSE(a.checkpoint_dir);
  EXPECT_FALSE(a.steps_per_epoch);
  EXPECT_EQ(WorkerArgs::Defaults().seed, 42);
}

TEST(WorkerArgs, UsageNamesEveryFlagWithinEightyColumns) {
  const std::string usage = WorkerArgs::Usage("hpcai500-worker");
  EXPECT_EQ(usage.rfind("usage: hpcai500-worker --workload W --config C", 0),
            0u);
  for (const std::string& arg : EveryFieldSet().ToArgv()) {
    if (arg.rfind("--", 0) == 0) {
      EXPECT_NE(usage.find(arg.substr(0, arg.find('='))), std::string::npos)
          << arg;
    }
  }
  EXPECT_NE(usage.find("[--precision fp32|bf16|fp16 (default fp32)]"),
            std::string::npos);
  size_t start = 0;
  for (size_t end = usage.find('\n'); end != std::string::npos;
       start = end + 1, end = usage.find('\n', start)) {
    EXPECT_LE(end - start, 80u) << usage.substr(start, end - start);
  }
}

// The worker writes and the agent links checkpoints under this one name.
TEST(CheckpointFileName, PadsTheEpochToSixDigits) {
  EXPECT_EQ(CheckpointFileName(0), "checkpoint-epoch-000000.pt");
  EXPECT_EQ(CheckpointFileName(7), "checkpoint-epoch-000007.pt");
  EXPECT_EQ(CheckpointFileName(123456), "checkpoint-epoch-123456.pt");
  EXPECT_EQ(CheckpointFileName(1234567), "checkpoint-epoch-1234567.pt");
}

}  // namespace
}  // namespace hpcai500
