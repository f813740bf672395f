// Runs the real hpcai500-worker with --mllog-submission and holds its event
// log to MLCommons' own training compliance checker (the mlperf-logging
// package in the virtual environment beside torch: ruleset 4.0.0, whose
// rules for an open-division log of benchmark resnet are common.yaml,
// open_common.yaml and open_resnet.yaml). Copies of the real log with a key
// removed or lines out of order show that the checker refuses them. An
// SGD and a LARS run are checked, and LARS trained to its target.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"

namespace hpcai500::worker {
namespace {

using hpcai500::testing::ReadEvents;
using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;
using hpcai500::testing::WithKey;
using nlohmann::json;

using ::hpcai500::testing::kWorker;
const char kPython[] = HPCAI500_PYTHON;  // the venv's, with mlperf-logging

// What the compliance checker said of a log.
struct Verdict {
  int exit_code = -1;  // 0: compliant
  std::string output;  // its report, stdout and stderr together
};

// Runs `python -m mlperf_logging.compliance_checker` on the log at `path`
// with the training rules 4.0.0, warnings (a key repeated with the same
// value) counted as errors; its files go beside the log.
Verdict CheckCompliance(const std::string& path) {
  hpcai500::testing::SubprocessOptions o;
  o.argv = {kPython, "-m", "mlperf_logging.compliance_checker"};
  o.argv.insert(o.argv.end(), {"--usage", "training", "--ruleset", "4.0.0"});
  o.argv.insert(o.argv.end(),
                {"--werror", "--log_output", path + ".checker.log", path});
  o.stdout_path = o.stderr_path = path + ".checker.out";
  hpcai500::testing::Subprocess checker(o);
  Verdict v;
  v.exit_code = checker.Wait(std::chrono::minutes(1));
  v.output = ReadFile(o.stdout_path);
  return v;
}

// Asserts that the checker passed the log at `path` with the open
// division's resnet rules (a log naming another division or benchmark
// would be held to other files).
void ExpectCompliant(const std::string& path) {
  const Verdict v = CheckCompliance(path);
  EXPECT_EQ(v.exit_code, 0)
      << kPython << " -m mlperf_logging.compliance_checker:\n"
      << v.output;
  EXPECT_NE(v.output.find("SUCCESS"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("training_4.0.0/open_resnet.yaml"), std::string::npos)
      << v.output;
}

// Asserts that the checker refused a log, saying `reason`.
void ExpectRefused(const Verdict& v, const std::string& reason) {
  EXPECT_EQ(v.exit_code, 1) << v.output;
  EXPECT_NE(v.output.find(reason), std::string::npos) << v.output;
}

std::vector<std::string> LinesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// `lines` as a file's text, each ended by "\n".
std::string Joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// The index of the first of `lines` that logs `key` (size() when none).
size_t LineWithKey(const std::vector<std::string>& lines,
                   const std::string& key) {
  const std::string needle = "\"key\": \"" + key + "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) return i;
  }
  return lines.size();
}

// The value of `key`'s line; a failure unless there is exactly one.
json OnlyValue(const std::vector<json>& events, const std::string& key) {
  const std::vector<json> found = WithKey(events, key);
  EXPECT_EQ(found.size(), 1u) << key;
  return found.empty() ? json() : found.front().at("value");
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
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    ASSERT_EQ(exit_code_, 0) << ReadFile(dir_->path() + "/stderr");
  }

  static std::string LogPath() { return dir_->path() + "/events"; }
  // A copy of the worker's log, as lines, for a test to break.
  static std::vector<std::string> Lines() {
    return LinesOf(ReadFile(LogPath()));
  }
  // Writes `lines` as the log `name` beside the worker's and checks it.
  static Verdict CheckCopy(const std::string& name,
                           const std::vector<std::string>& lines) {
    const std::string path = dir_->path() + "/" + name;
    std::ofstream(path) << Joined(lines);
    return CheckCompliance(path);
  }

  static ScratchDir* dir_;
  static int exit_code_;
};
ScratchDir* SubmissionLog::dir_ = nullptr;
int SubmissionLog::exit_code_ = -1;

TEST_F(SubmissionLog, PassesMlperfsComplianceChecker) {
  ExpectCompliant(LogPath());
}

// The checker can fail: the same log without submission_org, which the
// rules require exactly once, is refused for it.
TEST_F(SubmissionLog, CheckerRefusesTheLogWithoutARequiredKey) {
  std::vector<std::string> lines = Lines();
  const size_t org = LineWithKey(lines, "submission_org");
  ASSERT_LT(org, lines.size());
  lines.erase(lines.begin() + org);
  ExpectRefused(
      CheckCopy("without_org", lines),
      "Required EXACTLY_ONE occurrence of 'submission_org' but found 0");
}

// ... and run_start moved before init_stop breaks the order the rules
// require (run_start only once initialisation has stopped).
TEST_F(SubmissionLog, CheckerRefusesRunStartBeforeInitStop) {
  std::vector<std::string> lines = Lines();
  const size_t init_stop = LineWithKey(lines, "init_stop");
  const size_t run_start = LineWithKey(lines, "run_start");
  ASSERT_LT(init_stop, run_start);
  ASSERT_LT(run_start, lines.size());
  const std::string moved = lines[run_start];
  lines.erase(lines.begin() + run_start);
  lines.insert(lines.begin() + init_stop, moved);
  ExpectRefused(CheckCopy("run_start_first", lines),
                "CHECK for 'run_start' failed");
}

// ... and a line cut short (its JSON unterminated) is a parsing error.
TEST_F(SubmissionLog, CheckerRefusesALineCutShort) {
  std::vector<std::string> lines = Lines();
  const size_t accuracy = LineWithKey(lines, "eval_accuracy");
  ASSERT_LT(accuracy, lines.size());
  lines[accuracy].resize(lines[accuracy].size() / 2);
  ExpectRefused(CheckCopy("cut_short", lines), "Log lines had parsing errors");
}

// The values are the run's, not placeholders: the org and platform given,
// two epochs of the config, the smoke config's batch and SGD recipe. The
// checker's open-division rules for resnet ask only for eval_accuracy;
// the batch size, optimizer and hyperparameter keys are rules of the closed
// division (closed_resnet.yaml, with the closed recipe's values), so this
// test holds the worker to them itself: each exactly once, with the value
// of the run.
TEST_F(SubmissionLog, ValuesAreThoseOfTheRun) {
  const std::vector<json> events = ReadEvents(LogPath());
  EXPECT_EQ(OnlyValue(events, "submission_org"), "Acme");
  EXPECT_EQ(OnlyValue(events, "submission_platform"), "two-cores");
  EXPECT_EQ(OnlyValue(events, "submission_division"), "open");
  EXPECT_EQ(OnlyValue(events, "submission_benchmark"), "resnet");
  EXPECT_EQ(OnlyValue(events, "global_batch_size"), 64);
  EXPECT_EQ(OnlyValue(events, "opt_name"), "sgd");
  // fashion_mnist_smoke: lr 0.8 per 256 images, momentum 0.9, wd 5e-4, no
  // warm-up, no label smoothing.
  EXPECT_DOUBLE_EQ(OnlyValue(events, "opt_base_learning_rate").get<double>(),
                   0.8 * 64 / 256);
  EXPECT_EQ(OnlyValue(events, "opt_learning_rate_warmup_epochs"), 0);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "opt_momentum").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "opt_weight_decay").get<double>(), 5e-4);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "label_smoothing").get<double>(), 0.0);
  EXPECT_EQ(OnlyValue(events, "gradient_accumulation_steps"), 1);
  EXPECT_EQ(WithKey(events, "epoch_stop").size(), 2u);
}

// Each line's "file" and "lineno" name the source line that logged it.
TEST_F(SubmissionLog, EveryLineNamesTheSourceLineThatLoggedIt) {
  for (const json& e : ReadEvents(LogPath())) {
    const json& m = e.at("metadata");
    const std::string file = m.at("file").get<std::string>();
    EXPECT_TRUE(
        std::filesystem::is_regular_file(HPCAI500_SOURCE_DIR "/" + file))
        << e.dump();
    EXPECT_GT(m.at("lineno").get<int>(), 0) << e.dump();
  }
}

// LARS (the free-level optimizer) on synthetic data: one ResNet-18 step of
// four 224x224 images, so the LARS keys go through the checker too.
TEST(LarsSubmissionLog, PassesTheCheckerAndCarriesTheLarsRecipe) {
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
  ExpectCompliant(dir + "/events");
  // The LARS keys are the closed division's (closed_resnet_lars.yaml) and
  // ours: the checker does not look at them in an open log.
  const std::vector<json> events = ReadEvents(dir + "/events");
  EXPECT_EQ(OnlyValue(events, "opt_name"), "lars");
  EXPECT_EQ(OnlyValue(events, "submission_status"), "research");
  // imagenet_lars: lr 0.256 per 256 images, momentum 0.9, wd 5e-5, 8 warm-up
  // epochs, a cosine to zero; trust coefficient 0.001, no epsilon.
  EXPECT_DOUBLE_EQ(
      OnlyValue(events, "lars_opt_base_learning_rate").get<double>(),
      0.256 * 4 / 256);
  EXPECT_DOUBLE_EQ(
      OnlyValue(events, "lars_opt_end_learning_rate").get<double>(), 0.0);
  EXPECT_EQ(OnlyValue(events, "lars_opt_learning_rate_warmup_epochs"), 8);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "lars_opt_momentum").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "lars_opt_weight_decay").get<double>(),
                   5e-5);
  EXPECT_DOUBLE_EQ(OnlyValue(events, "lars_epsilon").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(
      OnlyValue(events, "lars_opt_trust_coefficient").get<double>(), 0.001);
}

// LARS trains, not only logs: fashion_mnist_lars_smoke's whole budget (two
// epochs of 6,000 images, lr 8.0 per 256, so 2.0 before the trust ratio, a
// rate plain SGD does not survive) reaches its 0.70 target with a falling
// training loss, and its log passes the checker.
TEST(LarsTraining, ReachesTheTargetWithFallingLossAndPassesTheChecker) {
  const ScratchDir scratch("lars_training");
  const std::string& dir = scratch.path();
  ASSERT_EQ(RunWorker({"--workload", "image_classification", "--config",
                       "fashion_mnist_lars_smoke", "--mllog-submission",
                       "org=Acme,platform=two-cores"},
                      dir),
            0)
      << ReadFile(dir + "/stderr");
  ExpectCompliant(dir + "/events");
  const std::vector<json> events = ReadEvents(dir + "/events");
  std::vector<double> losses;
  for (const json& e : WithKey(events, "hpcai500_epoch_stats")) {
    losses.push_back(e.at("value").at("train_loss").get<double>());
  }
  std::vector<double> accuracy;
  for (const json& e : WithKey(events, "eval_accuracy")) {
    accuracy.push_back(e.at("value").get<double>());
  }
  EXPECT_EQ(OnlyValue(events, "opt_name"), "lars");
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_LT(losses[1], losses[0]);
  ASSERT_EQ(accuracy.size(), 2u);
  EXPECT_GE(accuracy.back(), 0.70);
  const std::vector<json> stop = WithKey(events, "run_stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].at("metadata").value("status", ""), "success");
}

}  // namespace
}  // namespace hpcai500::worker
