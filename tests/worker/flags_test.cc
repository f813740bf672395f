#include "worker/flags.h"

#include <gtest/gtest.h>

#include <map>

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
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.steps_per_epoch, 5);
  EXPECT_EQ(o.rank, 0);
  EXPECT_EQ(o.world_size, 1);
  EXPECT_EQ(o.threads, 8);
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
  EXPECT_EQ(o.threads, 4);
}

struct Refusal {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string named;  // must appear in the error
};

TEST(WorkerFlags, RefusesBadInputNamingIt) {
  const std::vector<Refusal> cases = {
      {Smoke({"--bogus", "1"}), {}, "--bogus"},
      {{"--workload", "image_classification", "--config", "nope"}, {}, "nope"},
      {{"--workload", "nope", "--config", "fashion_mnist"}, {}, "nope"},
      {{"--workload", "image_classification", "--config", "imagenet"},
       {},
       "not implemented"},
      {{"--config", "fashion_mnist"}, {}, "--workload"},
      {Smoke({"--epochs", "0"}), {}, "--epochs"},
      {Smoke({"--batch-size", "x"}), {}, "--batch-size"},
      {Smoke({"--precision", "fp8"}), {}, "--precision"},
      {Smoke({"--device", "tpu"}), {}, "--device"},
      {Smoke({"--threads"}), {}, "--threads"},
      {kSmoke, {{"WORLD_SIZE", "2"}, {"RANK", "2"}}, "RANK"},
      {kSmoke, {{"WORLD_SIZE", "2"}, {"RANK", "1"}}, "MASTER_ADDR"},
      {kSmoke,
       {{"WORLD_SIZE", "2"},
        {"RANK", "1"},
        {"MASTER_ADDR", "h"},
        {"MASTER_PORT", "70000"}},
       "MASTER_PORT"},
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

TEST(WorkerFlags, HelpAsksForUsage) {
  WorkerOptions o;
  std::string error;
  EXPECT_EQ(Parse({"--help"}, &o, &error), ParseOutcome::kHelp);
  EXPECT_NE(WorkerUsage().find("--workload"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500::worker
