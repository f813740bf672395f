// PlanAttempt: a checked assignment planned into each rank's argv,
// environment and files, and every field that refuses it.
#include "agent/launch/assignment.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/vocabulary.h"
#include "common/worker_args.h"
#include "gtest/gtest.h"
#include "methodology/registry.h"
#include "methodology/spec.h"

namespace hpcai500::agent {
namespace {

v1::Assignment GoodStart() {
  v1::Assignment a;
  a.set_phase(v1::Assignment::PHASE_START);
  a.mutable_key()->set_run_id(12);
  a.mutable_key()->set_attempt(2);
  v1::RunSpec* spec = a.mutable_spec();
  spec->set_workload("image_classification");
  spec->set_config("fashion_mnist_smoke");
  spec->set_device("cpu");
  spec->set_precision("fp32");
  spec->set_compression("powersgd");
  spec->set_epochs(3);
  spec->set_batch_size(64);
  spec->set_seed(42);
  a.set_world_size(4);
  a.set_node_rank(1);
  a.add_ranks(2);
  a.add_ranks(3);
  a.set_master_addr("10.0.0.5");
  a.set_master_port(29500);
  return a;
}

NodeContext Node() {
  NodeContext node;
  node.workdir = "/var/lib/agent";
  node.worker_path = "/opt/bin/hpcai500-worker";
  node.cpus = 9;
  node.base_env = {"PATH=/usr/bin", "RANK=99", "HOME=/root"};
  node.checkpoint_root = "/lustre/ckpt";
  return node;
}

bool Has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

// The value after `flag` in argv, or "<absent>".
std::string FlagValue(const std::vector<std::string>& argv,
                      const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  if (it == argv.end() || it + 1 == argv.end()) return "<absent>";
  return *(it + 1);
}

// What the worker reads back from a planned argv (without the program).
WorkerArgs WorkerReads(const std::vector<std::string>& argv) {
  WorkerArgs args;
  std::string error;
  EXPECT_EQ(WorkerArgs::FromArgv({argv.begin() + 1, argv.end()}, &args, &error),
            ArgvOutcome::kArgs)
      << error;
  return args;
}

TEST(PlanAttempt, BuildsArgvAndEnvironmentPerLocalRank) {
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->dir, "/var/lib/agent/runs/12/attempt-2");
  EXPECT_EQ(plan->checkpoint_dir, "/lustre/ckpt/run-12/attempt-2");
  EXPECT_EQ(plan->resume_source, "");
  ASSERT_EQ(plan->ranks.size(), 2u);
  const RankPlan& second = plan->ranks[1];
  EXPECT_EQ(second.rank, 3);
  EXPECT_EQ(second.local_rank, 1);
  const std::string dir = "/var/lib/agent/runs/12/attempt-2";
  EXPECT_EQ(second.launch.argv,
            (std::vector<std::string>{"/opt/bin/hpcai500-worker",
                                      "--workload",
                                      "image_classification",
                                      "--config",
                                      "fashion_mnist_smoke",
                                      "--epochs",
                                      "3",
                                      "--batch-size",
                                      "64",
                                      "--precision",
                                      "fp32",
                                      "--compression",
                                      "powersgd",
                                      "--device",
                                      "cpu",
                                      "--seed",
                                      "42",
                                      "--events-file",
                                      dir + "/rank-3.events",
                                      "--threads",
                                      "4",
                                      "--checkpoint-dir",
                                      "/lustre/ckpt/run-12/attempt-2",
                                      "--lease-file",
                                      dir + "/lease",
                                      "--run-id",
                                      "12",
                                      "--attempt",
                                      "2"}));
  EXPECT_EQ(second.launch.stdout_path, dir + "/rank-3.stdout");
  EXPECT_EQ(second.launch.stderr_path, dir + "/rank-3.stderr");
  EXPECT_EQ(second.pid_path, dir + "/rank-3.pid");
  const std::vector<std::string>& env = second.launch.env;
  EXPECT_TRUE(Has(env, "RANK=3"));
  EXPECT_FALSE(Has(env, "RANK=99"));  // the agent's own value is replaced
  EXPECT_TRUE(Has(env, "WORLD_SIZE=4"));
  EXPECT_TRUE(Has(env, "LOCAL_RANK=1"));
  EXPECT_TRUE(Has(env, "LOCAL_WORLD_SIZE=2"));
  EXPECT_TRUE(Has(env, "MASTER_ADDR=10.0.0.5"));
  EXPECT_TRUE(Has(env, "MASTER_PORT=29500"));
  EXPECT_TRUE(Has(env, "PATH=/usr/bin"));
  EXPECT_FALSE(std::any_of(env.begin(), env.end(), [](const std::string& kv) {
    return kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0;
  }));
}

TEST(PlanAttempt, CudaGivesEachLocalRankOneDevice) {
  v1::Assignment a = GoodStart();
  a.mutable_spec()->set_device("cuda");
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(Has(plan->ranks[0].launch.env, "CUDA_VISIBLE_DEVICES=0"));
  EXPECT_TRUE(Has(plan->ranks[1].launch.env, "CUDA_VISIBLE_DEVICES=1"));

  NodeContext node = Node();
  node.base_env.push_back("CUDA_VISIBLE_DEVICES=4,6");
  plan = PlanAttempt(a, node);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(Has(plan->ranks[1].launch.env, "CUDA_VISIBLE_DEVICES=6"));
}

TEST(PlanAttempt, EachRankIsToldWhichAgentHoldsItsLease) {
  NodeContext node = Node();
  node.lease_holder_pid = 4242;
  // A value the agent inherited (or was told to pass on) is replaced.
  node.base_env.push_back("HPCAI500_LEASE_HOLDER_PID=1");
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), node);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const RankPlan& rank : plan->ranks) {
    EXPECT_TRUE(Has(rank.launch.env, "HPCAI500_LEASE_HOLDER_PID=4242"));
    EXPECT_FALSE(Has(rank.launch.env, "HPCAI500_LEASE_HOLDER_PID=1"));
  }
  // Without a pid (tests' nodes), none is named.
  plan = PlanAttempt(GoodStart(), Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const std::string& kv : plan->ranks[0].launch.env) {
    EXPECT_NE(kv.rfind("HPCAI500_LEASE_HOLDER_PID=", 0), 0u) << kv;
  }
}

TEST(PlanAttempt, ThreadsPerRankIsAtLeastOne) {
  NodeContext node = Node();
  node.cpus = 1;
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), node);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(FlagValue(plan->ranks[0].launch.argv, "--threads"), "1");
}

TEST(PlanAttempt, ResumeLinksTheEarlierAttemptsCheckpointAndPassesResume) {
  v1::Assignment a = GoodStart();  // attempt 2 of 3 epochs
  a.set_resume_from_attempt(1);
  a.set_resume_from_epoch(2);
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->checkpoint_dir, "/lustre/ckpt/run-12/attempt-2");
  EXPECT_EQ(plan->resume_source,
            "/lustre/ckpt/run-12/attempt-1/checkpoint-epoch-000002.pt");
  for (const RankPlan& rank : plan->ranks) {
    const WorkerArgs args = WorkerReads(rank.launch.argv);
    EXPECT_EQ(args.checkpoint_dir, "/lustre/ckpt/run-12/attempt-2");
    EXPECT_EQ(args.resume, true);
  }
}

TEST(PlanAttempt, EpochZeroStartsFreshWithACheckpointFolder) {
  v1::Assignment a = GoodStart();
  a.set_resume_from_attempt(1);  // an earlier attempt without a checkpoint
  a.set_resume_from_epoch(0);
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->resume_source, "");
  const WorkerArgs args = WorkerReads(plan->ranks[0].launch.argv);
  EXPECT_EQ(args.checkpoint_dir, "/lustre/ckpt/run-12/attempt-2");
  EXPECT_FALSE(args.resume.has_value());
}

TEST(PlanAttempt, ResumeRefusalsNameTheFieldAndTheRange) {
  v1::Assignment same = GoodStart();
  same.set_resume_from_attempt(2);
  same.set_resume_from_epoch(1);
  EXPECT_EQ(PlanAttempt(same, Node()).status().message(),
            "assignment: resume_from_attempt: must be an earlier attempt "
            "(1 .. 1), got 2");
  v1::Assignment first = GoodStart();
  first.mutable_key()->set_attempt(1);
  first.set_resume_from_attempt(1);
  first.set_resume_from_epoch(1);
  EXPECT_EQ(PlanAttempt(first, Node()).status().message(),
            "assignment: resume_from_attempt: must be an earlier attempt "
            "(none), got 1");
  v1::Assignment late = GoodStart();
  late.set_resume_from_attempt(1);
  late.set_resume_from_epoch(4);
  EXPECT_EQ(PlanAttempt(late, Node()).status().message(),
            "assignment: resume_from_epoch: must be between 0 and 3, got 4");
}

// "--data" and its value, or nothing.
std::vector<std::string> DataArgs(const std::vector<std::string>& argv) {
  auto it = std::find(argv.begin(), argv.end(), "--data");
  if (it == argv.end()) return {};
  return std::vector<std::string>(it, std::min(it + 2, argv.end()));
}

TEST(PlanAttempt, PassesTheNodesDirectoryForTheConfigsDataset) {
  NodeContext node = Node();
  node.data_dirs = {{"fashion_mnist", "/scratch/fashion"},
                    {"imagenet", "/lustre/imagenet"}};
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), node);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const RankPlan& rank : plan->ranks) {
    EXPECT_EQ(DataArgs(rank.launch.argv),
              (std::vector<std::string>{"--data", "/scratch/fashion"}));
  }
}

TEST(PlanAttempt, UnmappedDatasetLeavesTheRegistrysDataDir) {
  NodeContext node = Node();
  node.data_dirs = {{"imagenet", "/lustre/imagenet"}};
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), node);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(DataArgs(plan->ranks[0].launch.argv).empty());
  EXPECT_EQ(FlagValue(plan->ranks[0].launch.argv, "--threads"), "4");
}

TEST(PlanAttempt, GeneratedAndSyntheticDataAreNeverMapped) {
  NodeContext node = Node();
  node.data_dirs = {{"extreme_weather", "/lustre/ewa"},
                    {"imagenet", "/lustre/imagenet"},
                    {"synthetic", "/lustre/synthetic"}};
  auto data_args = [&](const std::string& workload, const std::string& config) {
    v1::Assignment a = GoodStart();
    a.mutable_spec()->set_workload(workload);
    a.mutable_spec()->set_config(config);
    absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, node);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? DataArgs(plan->ranks[0].launch.argv)
                     : std::vector<std::string>{"failed"};
  };
  EXPECT_EQ(data_args("extreme_weather", "ewa"),
            (std::vector<std::string>{"--data", "/lustre/ewa"}));
  EXPECT_TRUE(data_args("extreme_weather", "ewa_smoke").empty());
  EXPECT_TRUE(data_args("image_classification", "synthetic_resnet50").empty());
  // A config this agent's registry does not know gets nothing.
  EXPECT_TRUE(data_args("image_classification", "not_built_in").empty());
}

// Each case breaks one field; the error must name it.
// The agent and the spec parser share one set of checks and lists (common/
// spec.h); the agent's messages name the assignment's field.
TEST(PlanAttempt, RefusalsUseTheSpecsChecksUnderTheAssignmentsFieldNames) {
  v1::Assignment device = GoodStart();
  device.mutable_spec()->set_device("tpu");
  EXPECT_EQ(PlanAttempt(device, Node()).status().message(),
            "assignment: spec.device: must be one of cpu, cuda; got 'tpu'");
  v1::Assignment port = GoodStart();
  port.set_master_port(70000);
  EXPECT_EQ(PlanAttempt(port, Node()).status().message(),
            "assignment: master_port: must be between 1 and 65535, got 70000");
  // Every compression a spec may name is one the agent accepts.
  for (std::string_view compression : AllNames<Compression>()) {
    v1::Assignment a = GoodStart();
    a.mutable_spec()->set_compression(std::string(compression));
    EXPECT_TRUE(PlanAttempt(a, Node()).ok()) << compression;
  }
}

// Every RunSpec field named like a worker flag reaches the worker through
// that flag's own rule and range (common/worker_args.cc).
TEST(PlanAttempt, SpecFieldsReachTheWorkerByTheFlagOfTheirName) {
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(GoodStart(), Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const WorkerArgs read = WorkerReads(plan->ranks[0].launch.argv);
  EXPECT_EQ(read.batch_size, 64);
  EXPECT_EQ(read.seed, 42);
  EXPECT_EQ(read.compression, Compression::kPowerSgd);

  v1::Assignment seed = GoodStart();
  seed.mutable_spec()->set_seed(-1);
  EXPECT_EQ(PlanAttempt(seed, Node()).status().message(),
            "assignment: spec.seed: --seed: '-1' is not an integer in [0, "
            "9223372036854775807]");

  // A fast path reaches the worker as its flag; one left off sends no flag
  // (a worker older than the flag runs as before).
  EXPECT_EQ(std::count(plan->ranks[0].launch.argv.begin(),
                       plan->ranks[0].launch.argv.end(), "--fused-bn"),
            0);
  v1::Assignment fused = GoodStart();
  fused.mutable_spec()->set_device("cuda");
  fused.mutable_spec()->set_fused_bn(true);
  plan = PlanAttempt(fused, Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(WorkerReads(plan->ranks[0].launch.argv).fused_bn, true);
  EXPECT_FALSE(WorkerReads(plan->ranks[0].launch.argv).cuda_graph);

  // A coordinator before v0.2 sends no compression: the worker's default.
  v1::Assignment old = GoodStart();
  old.mutable_spec()->clear_compression();
  plan = PlanAttempt(old, Node());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(WorkerReads(plan->ranks[0].launch.argv).compression);
}

struct BadCase {
  std::string name;
  void (*mutate)(v1::Assignment&);
  std::string field;
};

class RefusesBadAssignment : public ::testing::TestWithParam<BadCase> {};

TEST_P(RefusesBadAssignment, NamingTheField) {
  v1::Assignment a = GoodStart();
  GetParam().mutate(a);
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, Node());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(GetParam().field), std::string::npos)
      << plan.status();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, RefusesBadAssignment,
    ::testing::Values(
        BadCase{
            "PathInWorkload",
            [](v1::Assignment& a) { a.mutable_spec()->set_workload("../x"); },
            "spec.workload"},
        BadCase{"ShellInConfig",
                [](v1::Assignment& a) {
                  a.mutable_spec()->set_config("smoke;rm -rf /");
                },
                "spec.config"},
        BadCase{
            "UpperCaseName",
            [](v1::Assignment& a) { a.mutable_spec()->set_config("Smoke"); },
            "spec.config"},
        BadCase{"EmptyWorkload",
                [](v1::Assignment& a) { a.mutable_spec()->set_workload(""); },
                "spec.workload"},
        BadCase{"UnknownDevice",
                [](v1::Assignment& a) { a.mutable_spec()->set_device("tpu"); },
                "spec.device"},
        BadCase{
            "UnknownPrecision",
            [](v1::Assignment& a) { a.mutable_spec()->set_precision("int4"); },
            "spec.precision"},
        BadCase{"UnknownCompression",
                [](v1::Assignment& a) {
                  a.mutable_spec()->set_compression("--rm");
                },
                "spec.compression"},
        BadCase{"ZeroEpochs",
                [](v1::Assignment& a) { a.mutable_spec()->set_epochs(0); },
                "spec.epochs"},
        BadCase{"HugeBatch",
                [](v1::Assignment& a) {
                  a.mutable_spec()->set_batch_size(1 << 30);
                },
                "spec.batch_size"},
        BadCase{"RankOutsideWorld",
                [](v1::Assignment& a) { a.set_ranks(1, 4); }, "ranks[1]"},
        BadCase{"NegativeRank", [](v1::Assignment& a) { a.set_ranks(0, -1); },
                "ranks[0]"},
        BadCase{"RankTwice", [](v1::Assignment& a) { a.set_ranks(1, 2); },
                "ranks[1]"},
        BadCase{"NoRanks", [](v1::Assignment& a) { a.clear_ranks(); }, "ranks"},
        BadCase{"ZeroWorld", [](v1::Assignment& a) { a.set_world_size(0); },
                "world_size"},
        BadCase{"PathInMasterAddr",
                [](v1::Assignment& a) { a.set_master_addr("host/../x"); },
                "master_addr"},
        BadCase{"PortZero", [](v1::Assignment& a) { a.set_master_port(0); },
                "master_port"},
        BadCase{"PortTooHigh",
                [](v1::Assignment& a) { a.set_master_port(70000); },
                "master_port"},
        BadCase{"NoRunId",
                [](v1::Assignment& a) { a.mutable_key()->set_run_id(0); },
                "key.run_id"},
        BadCase{"NegativeAttempt",
                [](v1::Assignment& a) { a.mutable_key()->set_attempt(-3); },
                "key.attempt"},
        BadCase{"ResumeFromThisAttempt",
                [](v1::Assignment& a) {
                  a.set_resume_from_attempt(2);
                  a.set_resume_from_epoch(1);
                },
                "resume_from_attempt"},
        BadCase{"ResumeFromNoAttempt",
                [](v1::Assignment& a) { a.set_resume_from_epoch(1); },
                "resume_from_attempt"},
        BadCase{"FreshStartNamingALaterAttempt",
                [](v1::Assignment& a) { a.set_resume_from_attempt(3); },
                "resume_from_attempt"},
        BadCase{"NegativeResumeEpoch",
                [](v1::Assignment& a) {
                  a.set_resume_from_attempt(1);
                  a.set_resume_from_epoch(-1);
                },
                "resume_from_epoch"},
        BadCase{"ResumeEpochPastTheSpec",
                [](v1::Assignment& a) {
                  a.set_resume_from_attempt(1);
                  a.set_resume_from_epoch(4);
                },
                "resume_from_epoch"},
        BadCase{"WrongPhase",
                [](v1::Assignment& a) {
                  a.set_phase(v1::Assignment::PHASE_RESERVE);
                },
                "phase"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return info.param.name;
    });

TEST(ReadsNodeData, OnlyConfigsThatReadRealDataFromADirectory) {
  auto reads = [](const char* workload, const char* config) {
    const ConfigInfo* info = Registry::Builtin().FindConfig(workload, config);
    EXPECT_NE(info, nullptr) << config;
    return info != nullptr && ReadsNodeData(*info);
  };
  EXPECT_TRUE(reads("image_classification", "imagenet"));
  EXPECT_TRUE(reads("image_classification", "fashion_mnist_smoke"));
  EXPECT_TRUE(reads("extreme_weather", "ewa"));
  EXPECT_FALSE(reads("image_classification", "synthetic_resnet50"));
  // Generated on first use into its own data_dir: mapping extreme_weather
  // must not make it write into (or read) the real dataset.
  EXPECT_FALSE(reads("extreme_weather", "ewa_smoke"));
}

}  // namespace
}  // namespace hpcai500::agent
