// The convergence check (methodology/convergence.h) held to MLCommons' own RCP
// checker (the mlperf-logging package in the venv: mlperf_logging.
// rcp_checker, training rules 4.1.0, the resnet benchmark's five runs per
// submission, every reference point: --rcp_pass full_rcps). Random
// reference sets and submissions at a reference's batch, between two and
// below the smallest are written as the checker reads them (rcps.json and
// five result_N.txt MLLOG files) and judged by both; they must agree on
// pass and fail and on the normalisation factor. Where the rules differ
// (above the largest batch the checker fails and hpcai500 leaves the row
// unchecked) no case is drawn.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "methodology/convergence.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

struct Case {
  std::vector<ReferenceConvergence> references;
  int64_t batch = 0;
  std::vector<std::optional<double>> epochs;  // five runs
};

void WriteCase(const std::filesystem::path& folder, const Case& c) {
  std::filesystem::create_directories(folder);
  nlohmann::json rcps = nlohmann::json::object();
  for (const ReferenceConvergence& r : c.references) {
    rcps["resnet_ref_" + std::to_string(r.global_batch)] = {
        {"Benchmark", "resnet"},
        {"BS", r.global_batch},
        {"Hyperparams", nlohmann::json::object()},
        {"Epochs to converge", r.epochs}};
  }
  std::ofstream(folder / "rcps.json") << rcps.dump();
  for (size_t i = 0; i < c.epochs.size(); ++i) {
    std::ofstream log(folder / ("result_" + std::to_string(i) + ".txt"));
    auto line = [&](const nlohmann::json& event) {
      log << ":::MLLOG " << event.dump() << "\n";
    };
    line({{"key", "submission_benchmark"}, {"value", "resnet"}});
    line({{"key", "global_batch_size"}, {"value", c.batch}});
    const double epochs = c.epochs[i].value_or(90);
    line({{"key", "eval_accuracy"},
          {"value", c.epochs[i].has_value() ? 0.76 : 0.5},
          {"metadata", {{"epoch_num", epochs}}}});
    line({{"key", "run_stop"},
          {"value", nullptr},
          {"metadata",
           {{"status", c.epochs[i].has_value() ? "success" : "aborted"}}}});
  }
}

// n epoch counts around `mean`, to a tenth of an epoch.
std::vector<double> Draw(std::mt19937& random, double mean, double spread,
                         int n) {
  std::normal_distribution<double> normal(mean, spread);
  std::vector<double> values;
  for (int i = 0; i < n; ++i) {
    values.push_back(std::max(1.0, std::round(normal(random) * 10) / 10));
  }
  return values;
}

TEST(RcpChecker, AgreesWithMlcommonsCheckerOnPassFailAndFactor) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) /
      ("rcp_checker_cases_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::mt19937 random(20261205);
  std::map<std::string, Case> cases;
  for (int i = 0; i < 60; ++i) {
    Case c;
    const double small_mean = 30 + (i % 7);
    for (auto [batch, mean] : {std::pair<int64_t, double>{256, small_mean},
                               {1024, small_mean * 1.4}}) {
      ReferenceConvergence r;
      r.global_batch = batch;
      r.epochs = Draw(random, mean, 1 + (i % 3), 10);
      r.made_by = "test";
      c.references.push_back(r);
    }
    const int64_t batches[] = {256, 1024, 640, 128};
    c.batch = batches[i % 4];
    // Submissions from well slower to far faster than the reference.
    const double reference_mean = c.batch == 1024  ? small_mean * 1.4
                                  : c.batch == 640 ? small_mean * 1.2
                                                   : small_mean;
    const double speed = 0.75 + 0.01 * (i * 7 % 40);
    for (double e : Draw(random, reference_mean * speed, 1, 5)) {
      c.epochs.push_back(e);
    }
    if (i % 10 == 3) c.epochs[2] = std::nullopt;  // one run never converged
    const ConvergenceResult ours =
        CheckConvergence(c.epochs, c.batch, c.references);
    // The checker's bisection stops within 1e-4 of the smallest acceptable
    // mean: a case that close to it could go either way.
    if (ours.reference.has_value() &&
        std::fabs(ours.mean_epochs - ours.reference->min_epochs) < 1e-3) {
      continue;
    }
    cases["case" + std::to_string(100 + i)] = c;
    WriteCase(root / ("case" + std::to_string(100 + i)), c);
  }
  const std::string out = (root / "checker.out").string();
  const std::string command = std::string(HPCAI500_PYTHON) + " " +
                              HPCAI500_SOURCE_DIR +
                              "/tests/methodology/rcp_checker_cases.py " +
                              root.string() + " > " + out + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(out);
  std::map<std::string, std::pair<bool, double>> checker;
  std::string name;
  int passed = 0;
  double factor = 0;
  while (in >> name >> passed >> factor) checker[name] = {passed != 0, factor};
  ASSERT_EQ(checker.size(), cases.size()) << "see " << out;
  std::filesystem::remove_all(root);

  int normalized = 0, review = 0, pass = 0;
  for (const auto& [case_name, c] : cases) {
    const ConvergenceResult ours =
        CheckConvergence(c.epochs, c.batch, c.references);
    const auto [checker_passed, checker_factor] = checker[case_name];
    SCOPED_TRACE(case_name + ": ours " + ConvergenceVerdictName(ours.verdict));
    ASSERT_NE(ours.verdict, ConvergenceVerdict::kUnchecked);
    ASSERT_NE(ours.verdict, ConvergenceVerdict::kNotConverged);
    EXPECT_EQ(ours.verdict != ConvergenceVerdict::kReview, checker_passed);
    EXPECT_NEAR(ours.factor, checker_factor, 1e-9);
    normalized += ours.verdict == ConvergenceVerdict::kNormalized;
    review += ours.verdict == ConvergenceVerdict::kReview;
    pass += ours.verdict == ConvergenceVerdict::kPass;
  }
  // The cases cover every verdict the checker can reach.
  EXPECT_GT(pass, 5);
  EXPECT_GT(normalized, 5);
  EXPECT_GT(review, 5);
  std::printf(
      "RCP checker: %zu cases agree (%d pass, %d normalized, %d "
      "review)\n",
      cases.size(), pass, normalized, review);
}

}  // namespace
}  // namespace hpcai500
