// Runs the real hpcai500-worker with --mllog-submission and holds its event
// log to the rules of MLCommons' training compliance checker (ruleset 4.0.0,
// open division, benchmark resnet) as tests/worker/mllog_checker.h states
// them: one test per rule family, failing with the rule's text; a LARS
// run against all of them; and LARS trained to a target.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "tests/worker/mllog_checker.h"
#include "tests/worker/test_util.h"

namespace hpcai500::worker::mllog_checker {
namespace {

using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;

const char kWorker[] = HPCAI500_BINARY_DIR "/bin/hpcai500-worker";

std::string Joined(const Violations& v) {
  std::string s;
  for (const std::string& line : v) s += "  " + line + "\n";
  return s;
}

// Runs the worker on `args` (rank 0 of 1, two threads) writing its events
// to `dir`/events; returns the exit code (-1: still running after 4 min).
int RunWorker(std::vector<std::string> args, const std::string& dir) {
  args.insert(args.end(), {"--events-file", dir + "/events"});
  return hpcai500::testing::RunWorkerAlone(kWorker, args, dir);
}

// Trains fashion_mnist_smoke (its two epochs, three steps each) once for
// the tests of one fixture.
class SubmissionLog : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir("mllog_sgd");
    exit_code_ =
        RunWorker({"--workload", "image_classification", "--config",
                   "fashion_mnist_smoke", "--steps-per-epoch", "3",
                   "--mllog-submission", "org=Acme,platform=two-cores"},
                  dir_->path());
    log_ = new Log(ParseText(ReadFile(dir_->path() + "/events")));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete log_;
  }
  void SetUp() override {
    ASSERT_EQ(exit_code_, 0) << ReadFile(dir_->path() + "/stderr");
  }

  static ScratchDir* dir_;
  static int exit_code_;
  static Log* log_;
};
ScratchDir* SubmissionLog::dir_ = nullptr;
int SubmissionLog::exit_code_ = -1;
Log* SubmissionLog::log_ = nullptr;

TEST_F(SubmissionLog, EveryLineParses) {
  EXPECT_TRUE(CheckParsing(*log_).empty()) << Joined(CheckParsing(*log_));
  EXPECT_GT(log_->lines.size(), 20u);
}

TEST_F(SubmissionLog, CarriesTheSubmissionKeysOfTheOpenDivision) {
  const Violations v = CheckSubmission(*log_);
  EXPECT_TRUE(v.empty()) << Joined(v);
}

TEST_F(SubmissionLog, InitializesThenRunsInTheRequiredOrder) {
  const Violations v = CheckInitAndRun(*log_);
  EXPECT_TRUE(v.empty()) << Joined(v);
}

TEST_F(SubmissionLog, NumbersEveryBlockEpochAndEvaluation) {
  const Violations v = CheckBlocksEpochsAndEvals(*log_);
  EXPECT_TRUE(v.empty()) << Joined(v);
}

TEST_F(SubmissionLog, StatesTrainAndEvalSamplesOnce) {
  const Violations v = CheckSampleCounts(*log_);
  EXPECT_TRUE(v.empty()) << Joined(v);
}

TEST_F(SubmissionLog, CarriesTheResnetBenchmarkAndHyperparameterKeys) {
  const Violations v = CheckResnet(*log_);
  EXPECT_TRUE(v.empty()) << Joined(v);
}

// The values are the run's, not placeholders: the org and platform given,
// two epochs of the config, the smoke config's batch and SGD recipe.
TEST_F(SubmissionLog, ValuesAreThoseOfTheRun) {
  auto only = [&](const std::string& key) {
    for (const Line& l : log_->lines) {
      if (l.key == key) return l.value;
    }
    ADD_FAILURE() << "no " << key;
    return nlohmann::json();
  };
  EXPECT_EQ(only("submission_org"), "Acme");
  EXPECT_EQ(only("submission_platform"), "two-cores");
  EXPECT_EQ(only("submission_division"), "open");
  EXPECT_EQ(only("submission_benchmark"), "resnet");
  EXPECT_EQ(only("global_batch_size"), 64);
  EXPECT_EQ(only("opt_name"), "sgd");
  EXPECT_DOUBLE_EQ(only("opt_base_learning_rate").get<double>(),
                   0.8 * 64 / 256);
  int epochs = 0;
  for (const Line& l : log_->lines) epochs += l.key == "epoch_stop";
  EXPECT_EQ(epochs, 2);
}

// LARS (the free-level optimizer) on synthetic data: one ResNet-18 step of
// four 224x224 images, so the LARS keys meet the rules too.
TEST(LarsSubmissionLog, PassesEveryRuleAndCarriesTheLarsRecipe) {
  const ScratchDir scratch("mllog_lars");
  const std::string& dir = scratch.path();
  ASSERT_EQ(RunWorker({"--workload", "image_classification", "--config",
                       "imagenet_lars", "--data", "synthetic", "--model",
                       "resnet18", "--batch-size", "4", "--epochs", "1",
                       "--steps-per-epoch", "1", "--mllog-submission",
                       "org=Acme,platform=two-cores,status=research"},
                      dir),
            0)
      << ReadFile(dir + "/stderr");
  const Log log = ParseText(ReadFile(dir + "/events"));
  const Violations v = CheckAll(log);
  EXPECT_TRUE(v.empty()) << Joined(v);
  std::map<std::string, nlohmann::json> value;
  for (const Line& l : log.lines) value[l.key] = l.value;
  EXPECT_EQ(value["opt_name"], "lars");
  EXPECT_EQ(value["submission_status"], "research");
  // imagenet_lars: lr 0.256 per 256 images, momentum 0.9, wd 5e-5, 8 warm-up
  // epochs; trust coefficient 0.001.
  EXPECT_DOUBLE_EQ(value["lars_opt_base_learning_rate"].get<double>(),
                   0.256 * 4 / 256);
  EXPECT_DOUBLE_EQ(value["lars_opt_momentum"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(value["lars_opt_weight_decay"].get<double>(), 5e-5);
  EXPECT_EQ(value["lars_opt_learning_rate_warmup_epochs"], 8);
  EXPECT_DOUBLE_EQ(value["lars_opt_trust_coefficient"].get<double>(), 0.001);
}

// LARS trains, not only logs: fashion_mnist_lars_smoke's whole budget (two
// epochs of 6,000 images, lr 8.0 per 256, so 2.0 before the trust ratio, a
// rate plain SGD does not survive) reaches its 0.70 target with a falling
// training loss, and its log passes every rule.
TEST(LarsTraining, ReachesTheTargetWithFallingLossAndPassesEveryRule) {
  const ScratchDir scratch("lars_training");
  const std::string& dir = scratch.path();
  ASSERT_EQ(RunWorker({"--workload", "image_classification", "--config",
                       "fashion_mnist_lars_smoke", "--mllog-submission",
                       "org=Acme,platform=two-cores"},
                      dir),
            0)
      << ReadFile(dir + "/stderr");
  const Log log = ParseText(ReadFile(dir + "/events"));
  const Violations v = CheckAll(log);
  EXPECT_TRUE(v.empty()) << Joined(v);
  std::vector<double> losses;
  std::vector<double> accuracy;
  std::string opt_name;
  std::string status;
  for (const Line& l : log.lines) {
    if (l.key == "hpcai500_epoch_stats") {
      losses.push_back(l.value.at("train_loss").get<double>());
    } else if (l.key == "eval_accuracy") {
      accuracy.push_back(l.value.get<double>());
    } else if (l.key == "opt_name") {
      opt_name = l.value.get<std::string>();
    } else if (l.key == "run_stop") {
      status = l.metadata.value("status", "");
    }
  }
  EXPECT_EQ(opt_name, "lars");
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_LT(losses[1], losses[0]);
  ASSERT_EQ(accuracy.size(), 2u);
  EXPECT_GE(accuracy.back(), 0.70);
  EXPECT_EQ(status, "success");
}

}  // namespace
}  // namespace hpcai500::worker::mllog_checker
