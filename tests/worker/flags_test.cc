#include "worker/flags.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "methodology/registry.h"
#include "worker/models/model_zoo.h"
#include "worker/test_slowdown.h"

namespace hpcai500::worker {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ParseOutcome Parse(std::vector<std::string> args, WorkerOptions* out,
                   std::string* error,
                   std::map<std::string, std::string> env = {}) {
  return ParseWorkerFlags(args, Registry::Builtin(), FakeEnv(env),
                          /*hardware_threads=*/8, out, error);
}

const std::vector<std::string> kSmoke = {"--workload", "image_classification",
                                         "--config", "fashion_mnist_smoke"};

std::vector<std::string> Smoke(std::vector<std::string> more) {
  std::vector<std::string> args = kSmoke;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(WorkerFlags, FlagsOverrideTheRegistryConfig) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(Smoke({"--epochs", "3", "--batch-size=32", "--data", "/d",
                         "--seed", "7", "--steps-per-epoch", "5"}),
                  &o, &error),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.config.name, "fashion_mnist_smoke");
  EXPECT_EQ(o.config.epochs, 3);
  EXPECT_EQ(o.config.batch_size, 32);
  EXPECT_EQ(o.config.data_dir, "/d");
  EXPECT_EQ(*o.args.seed, 7);
  EXPECT_EQ(*o.args.steps_per_epoch, 5);
  EXPECT_EQ(o.rank, 0);
  EXPECT_EQ(o.world_size, 1);
  EXPECT_EQ(*o.args.threads, 8);
}

TEST(WorkerFlags, ReadsTheRankLayoutAndSplitsThreads) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error,
                  {{"RANK", "3"},
                   {"WORLD_SIZE", "4"},
                   {"LOCAL_RANK", "1"},
                   {"LOCAL_WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "10.0.0.1"},
                   {"MASTER_PORT", "29500"}}),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(*o.args.threads, 4);
}

TEST(WorkerFlags, EngineFlagsHaveDefaultsAndParse) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error), ParseOutcome::kRun) << error;
  EXPECT_EQ(*o.args.compression, Compression::kNone);
  EXPECT_EQ(*o.args.powersgd_rank, 1);
  EXPECT_EQ(*o.args.powersgd_warmup_steps, 100);
  EXPECT_DOUBLE_EQ(*o.args.bucket_mb, 25);
  EXPECT_FALSE(*o.args.deterministic);
  EXPECT_FALSE(*o.args.resume);
  EXPECT_EQ(o.args.checkpoint_dir, std::nullopt);
  EXPECT_EQ(*o.args.watchdog_seconds, 300);
  EXPECT_EQ(*o.args.collective_timeout_seconds, 180);
  EXPECT_EQ(o.rank_source, "none");

  ASSERT_EQ(Parse(Smoke({"--compression", "powersgd", "--powersgd-rank=4",
                         "--powersgd-warmup-steps", "7", "--bucket-mb", "0.5",
                         "--deterministic", "--checkpoint-dir", "/ck",
                         "--resume", "--watchdog-seconds", "0",
                         "--collective-timeout-seconds", "30"}),
                  &o, &error),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(*o.args.compression, Compression::kPowerSgd);
  EXPECT_EQ(*o.args.powersgd_rank, 4);
  EXPECT_EQ(*o.args.powersgd_warmup_steps, 7);
  EXPECT_DOUBLE_EQ(*o.args.bucket_mb, 0.5);
  EXPECT_TRUE(*o.args.deterministic);
  EXPECT_TRUE(*o.args.resume);
  EXPECT_EQ(o.args.checkpoint_dir, "/ck");
  EXPECT_EQ(*o.args.watchdog_seconds, 0);
  EXPECT_EQ(*o.args.collective_timeout_seconds, 30);

  ASSERT_EQ(
      Parse(Smoke({"--deterministic=false", "--compression=fp16"}), &o, &error),
      ParseOutcome::kRun)
      << error;
  EXPECT_FALSE(*o.args.deterministic);
  EXPECT_EQ(*o.args.compression, Compression::kFp16);
}

TEST(WorkerFlags, ReadsTheRankLayoutFromOpenMpi) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error,
                  {{"OMPI_COMM_WORLD_RANK", "5"},
                   {"OMPI_COMM_WORLD_SIZE", "8"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                   {"MASTER_ADDR", "node0"},
                   {"MASTER_PORT", "29501"}}),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.rank_source, "openmpi");
  EXPECT_EQ(o.rank, 5);
  EXPECT_EQ(o.world_size, 8);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.local_world_size, 4);
  EXPECT_EQ(o.master_addr, "node0");
  EXPECT_EQ(*o.args.threads, 2);  // 8 cores / 4 local ranks
}

TEST(WorkerFlags, ReadsTheRankLayoutFromSlurmNtasksPerNode) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error,
                  {{"SLURM_PROCID", "3"},
                   {"SLURM_NTASKS", "4"},
                   {"SLURM_LOCALID", "1"},
                   {"SLURM_NTASKS_PER_NODE", "2"},
                   {"MASTER_ADDR", "n1"},
                   {"MASTER_PORT", "1234"}}),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.rank_source, "slurm");
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.local_world_size, 2);
  EXPECT_EQ(*o.args.threads, 4);
}

TEST(WorkerFlags, ReadsSlurmTasksPerNodeForThisNode) {
  WorkerOptions o;
  std::string error;
  // Nodes 0 and 1 run 4 tasks each, node 2 runs 1: this is node 2.
  ASSERT_EQ(Parse(kSmoke, &o, &error,
                  {{"SLURM_PROCID", "8"},
                   {"SLURM_NTASKS", "9"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_NODEID", "2"},
                   {"SLURM_TASKS_PER_NODE", "4(x2),1"},
                   {"MASTER_ADDR", "n0"},
                   {"MASTER_PORT", "1234"}}),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.local_world_size, 1);
  EXPECT_EQ(*o.args.threads, 8);
}

TEST(WorkerFlags, TorchrunVariablesWinOverSlurmOnes) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error,
                  {{"RANK", "0"},
                   {"WORLD_SIZE", "1"},
                   {"SLURM_PROCID", "3"},
                   {"SLURM_NTASKS", "4"}}),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.rank_source, "torchrun");
  EXPECT_EQ(o.world_size, 1);
}

struct Refusal {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string named;  // must appear in the error
};

TEST(WorkerFlags, DistBackendFollowsTheDeviceUnlessGiven) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse(kSmoke, &o, &error), ParseOutcome::kRun) << error;
  EXPECT_EQ(*o.args.dist_backend, DistBackend::kGloo);
  ASSERT_EQ(Parse(Smoke({"--device", "cuda"}), &o, &error), ParseOutcome::kRun)
      << error;
  EXPECT_EQ(*o.args.dist_backend, DistBackend::kNccl);
  // Two ranks on one GPU: Gloo carries the CUDA tensors.
  ASSERT_EQ(
      Parse(Smoke({"--device", "cuda", "--dist-backend", "gloo"}), &o, &error),
      ParseOutcome::kRun)
      << error;
  EXPECT_EQ(*o.args.device, Device::kCuda);
  EXPECT_EQ(*o.args.dist_backend, DistBackend::kGloo);
  // Parsed as given: CheckCommunication refuses NCCL on the CPU.
  ASSERT_EQ(Parse(Smoke({"--dist-backend=nccl"}), &o, &error),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(*o.args.dist_backend, DistBackend::kNccl);
  EXPECT_NE(WorkerUsage().find("--dist-backend gloo|nccl"), std::string::npos);
}

TEST(WorkerFlags, RefusesBadInputNamingIt) {
  const std::vector<Refusal> cases = {
      {Smoke({"--bogus", "1"}), {}, "--bogus"},
      {{"--workload", "image_classification", "--config", "nope"}, {}, "nope"},
      {{"--workload", "nope", "--config", "fashion_mnist"}, {}, "nope"},
      {Smoke({"--model", "resnet7"}), {}, "resnet7"},
      // The list of known models comes from the zoo: detectors included.
      {Smoke({"--model", "resnet7"}), {}, "faster_rcnn_resnet50"},
      {Smoke({"--mllog-submission", "org=x"}), {}, "platform="},
      {Smoke({"--mllog-submission", "org=x,platform=y,colour=z"}),
       {},
       "colour"},
      {Smoke({"--mllog-submission", "org=x,platform=y,status=orbit"}),
       {},
       "orbit"},
      {{"--config", "fashion_mnist"}, {}, "--workload"},
      {Smoke({"--epochs", "0"}), {}, "--epochs"},
      {Smoke({"--batch-size", "x"}), {}, "--batch-size"},
      {Smoke({"--precision", "fp8"}), {}, "--precision"},
      {Smoke({"--device", "tpu"}), {}, "--device"},
      {Smoke({"--dist-backend", "mpi"}), {}, "--dist-backend"},
      {Smoke({"--dist-backend", "mpi"}), {}, "gloo or nccl"},
      {Smoke({"--threads"}), {}, "--threads"},
      {kSmoke, {{"WORLD_SIZE", "2"}, {"RANK", "2"}}, "RANK"},
      {kSmoke, {{"WORLD_SIZE", "2"}, {"RANK", "1"}}, "MASTER_ADDR"},
      {kSmoke,
       {{"WORLD_SIZE", "2"},
        {"RANK", "1"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "70000"}},
       "MASTER_PORT"},
      {Smoke({"--compression", "zip"}), {}, "--compression"},
      {Smoke({"--powersgd-rank", "0"}), {}, "--powersgd-rank"},
      {Smoke({"--bucket-mb", "-1"}), {}, "--bucket-mb"},
      {Smoke({"--bucket-mb", "1x"}), {}, "--bucket-mb"},
      {Smoke({"--deterministic=maybe"}), {}, "--deterministic"},
      {Smoke({"--resume"}), {}, "--checkpoint-dir"},
      {Smoke({"--checkpoint-dir="}), {}, "--checkpoint-dir"},
      {Smoke({"--watchdog-seconds", "-5"}), {}, "--watchdog-seconds"},
      {Smoke({"--collective-timeout-seconds", "0"}),
       {},
       "--collective-timeout-seconds"},
      {kSmoke,
       {{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}},
       "MASTER_ADDR"},
      {kSmoke,
       {{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}},
       "OMPI_COMM_WORLD_RANK"},
      {kSmoke, {{"SLURM_NTASKS", "2"}}, "SLURM_PROCID"},
      {kSmoke,
       {{"SLURM_NTASKS", "4"},
        {"SLURM_PROCID", "0"},
        {"SLURM_TASKS_PER_NODE", "2(x"}},
       "SLURM_TASKS_PER_NODE"},
  };
  for (const Refusal& c : cases) {
    WorkerOptions o;
    std::string error;
    EXPECT_EQ(Parse(c.args, &o, &error, c.env), ParseOutcome::kError)
        << c.named;
    EXPECT_NE(error.find(c.named), std::string::npos)
        << "error '" << error << "' does not name " << c.named;
  }
}

TEST(WorkerFlags, RefusesAConfigListedButNotImplemented) {
  std::string error;
  std::optional<Registry> registry = Registry::Parse(
      "[workload image_classification]\n"
      "[config image_classification/later]\ntarget = 0.5\nepochs = 1\n"
      "batch_size = 8\nimplemented = false\n",
      &error);
  ASSERT_TRUE(registry) << error;
  WorkerOptions o;
  EXPECT_EQ(ParseWorkerFlags(
                {"--workload", "image_classification", "--config", "later"},
                *registry, FakeEnv({}), 8, &o, &error),
            ParseOutcome::kError);
  EXPECT_NE(error.find("not implemented"), std::string::npos) << error;
}

TEST(WorkerFlags, ModelDataAndSubmissionFlagsOverrideTheConfig) {
  WorkerOptions o;
  std::string error;
  ASSERT_EQ(Parse({"--workload", "image_classification", "--config", "cifar10",
                   "--model", "resnet34", "--data", "synthetic",
                   "--mllog-submission", "org=Acme,platform=box-8"},
                  &o, &error),
            ParseOutcome::kRun)
      << error;
  EXPECT_EQ(o.config.model, "resnet34");
  EXPECT_EQ(o.config.dataset, "cifar10");  // synthetic samples shaped like it
  EXPECT_FALSE(o.config.real_data);
  ASSERT_TRUE(o.args.mllog_submission);
  EXPECT_EQ(o.args.mllog_submission->org, "Acme");
  EXPECT_EQ(o.args.mllog_submission->platform, "box-8");
  EXPECT_EQ(o.args.mllog_submission->status, "onprem");

  WorkerOptions plain;
  ASSERT_EQ(Parse({"--workload", "image_classification", "--config", "cifar10"},
                  &plain, &error),
            ParseOutcome::kRun);
  EXPECT_EQ(plain.config.model, "resnet18");
  EXPECT_TRUE(plain.config.real_data);
  EXPECT_FALSE(plain.args.mllog_submission);
}

TEST(WorkerFlags, ImagenetDoublesItsBatchInMixedPrecisionUnlessGiven) {
  WorkerOptions fp32, bf16, given;
  std::string error;
  const std::vector<std::string> imagenet = {
      "--workload", "image_classification", "--config", "imagenet"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = imagenet;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  ASSERT_EQ(Parse(with({}), &fp32, &error), ParseOutcome::kRun) << error;
  ASSERT_EQ(Parse(with({"--precision", "bf16"}), &bf16, &error),
            ParseOutcome::kRun);
  ASSERT_EQ(Parse(with({"--precision", "bf16", "--batch-size", "100"}), &given,
                  &error),
            ParseOutcome::kRun);
  EXPECT_EQ(fp32.config.batch_size, 128);
  EXPECT_EQ(bf16.config.batch_size, 256);
  EXPECT_EQ(given.config.batch_size, 100);
}

TEST(WorkerFlags, FusedBnTakesTheResNetsAndRefusesOtherModels) {
  WorkerOptions o;
  std::string error;
  const std::vector<std::string> cuda = {"--device", "cuda", "--fused-bn"};
  std::vector<std::string> resnet = Smoke({"--model", "resnet50"});
  resnet.insert(resnet.end(), cuda.begin(), cuda.end());
  ASSERT_EQ(Parse(resnet, &o, &error), ParseOutcome::kRun) << error;
  EXPECT_EQ(o.args.fused_bn, true);

  std::vector<std::string> small = Smoke(cuda);  // resnet_small
  EXPECT_EQ(Parse(small, &o, &error), ParseOutcome::kError);
  EXPECT_EQ(error.rfind("--fused-bn: model resnet_small has no fused", 0), 0u)
      << error;
  EXPECT_NE(error.find("resnet50"), std::string::npos) << error;

  std::vector<std::string> detector = {"--workload", "extreme_weather",
                                       "--config", "ewa_smoke"};
  detector.insert(detector.end(), cuda.begin(), cuda.end());
  EXPECT_EQ(Parse(detector, &o, &error), ParseOutcome::kError);
  EXPECT_NE(error.find("--fused-bn: model faster_rcnn_resnet18"),
            std::string::npos)
      << error;
}

TEST(TestStepSlowdownPct, ComesOnlyFromItsEnvironmentVariable) {
  EXPECT_EQ(TestStepSlowdownPct(FakeEnv({})), 0);
  EXPECT_EQ(
      TestStepSlowdownPct(FakeEnv({{"HPCAI500_TEST_SLOW_STEP_PCT", "150"}})),
      150);
  for (const char* bad : {"-1", "1001", "fast", ""}) {
    try {
      TestStepSlowdownPct(FakeEnv({{"HPCAI500_TEST_SLOW_STEP_PCT", bad}}));
      ADD_FAILURE() << "'" << bad << "' was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("HPCAI500_TEST_SLOW_STEP_PCT"),
                std::string::npos)
          << e.what();
    }
  }
  // Hidden: no flag, and not in the usage text.
  EXPECT_EQ(WorkerUsage().find("slow"), std::string::npos);
}

TEST(TestSlowdownGate, IsTheFileItsVariableNamesOrNone) {
  EXPECT_EQ(TestSlowdownGate(FakeEnv({})), "");
  EXPECT_EQ(TestSlowdownGate(
                FakeEnv({{"HPCAI500_TEST_SLOW_WHILE_FILE", "/tmp/gate"}})),
            "/tmp/gate");
}

TEST(WorkerFlags, HelpAsksForUsage) {
  WorkerOptions o;
  std::string error;
  EXPECT_EQ(Parse({"--help"}, &o, &error), ParseOutcome::kHelp);
  EXPECT_NE(WorkerUsage().find("--workload"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500::worker

namespace hpcai500::worker {
namespace {

// The registry's fast_paths (what the coordinator accepts at submit) list
// fused_bn exactly for the configs whose model the worker fuses, and
// cuda_graph for the classification configs (the detector's step has shapes
// that follow the data).
TEST(WorkerFlags, TheRegistryListsFusedBnAndCudaGraphWhereTheWorkerServesThem) {
  for (const ConfigInfo& config : Registry::Builtin().configs()) {
    const auto listed = [&config](const std::string& path) {
      return std::count(config.fast_paths.begin(), config.fast_paths.end(),
                        path) > 0;
    };
    const ModelSpec* model = FindModel(config.model);
    EXPECT_EQ(listed("fused_bn"),
              model != nullptr && model->family == ModelFamily::kResNet)
        << config.workload << "/" << config.name;
    EXPECT_EQ(listed("cuda_graph"), config.workload == "image_classification")
        << config.workload << "/" << config.name;
  }
}

}  // namespace
}  // namespace hpcai500::worker
