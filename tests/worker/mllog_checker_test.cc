// The compliance rules of tests/worker/mllog_checker.h on hand-written logs:
// a log that follows them passes, and breaking each rule fails with that
// rule's text. (mllog_compliance_test.cc applies them to the real worker.)
#include "tests/worker/mllog_checker.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hpcai500::worker::mllog_checker {
namespace {

using nlohmann::json;

json Entry(const std::string& key, json value, json metadata = json::object(),
           int64_t time_ms = 1000) {
  metadata["file"] = "engine.cc";
  metadata["lineno"] = 0;
  return {
      {"namespace", ""}, {"time_ms", time_ms}, {"event_type", "POINT_IN_TIME"},
      {"key", key},      {"value", value},     {"metadata", metadata}};
}

// A complete open-division resnet log of one epoch with SGD.
std::vector<json> GoodLog() {
  const json epoch = {{"epoch_num", 1}};
  return {Entry("init_start", nullptr),
          Entry("submission_org", "Acme"),
          Entry("submission_platform", "two-cores"),
          Entry("submission_division", "open"),
          Entry("submission_status", "onprem"),
          Entry("cache_clear", true),
          Entry("submission_benchmark", "resnet"),
          Entry("seed", 1),
          Entry("global_batch_size", 64),
          Entry("train_samples", 192),
          Entry("eval_samples", 10000),
          Entry("opt_name", "sgd"),
          Entry("opt_base_learning_rate", 0.2),
          Entry("opt_learning_rate_warmup_epochs", 0),
          Entry("opt_momentum", 0.9),
          Entry("opt_weight_decay", 5e-4),
          Entry("label_smoothing", 0.0),
          Entry("gradient_accumulation_steps", 1),
          Entry("init_stop", nullptr, json::object(), 2000),
          Entry("run_start", nullptr, json::object(), 2001),
          Entry("block_start", nullptr,
                {{"first_epoch_num", 1}, {"epoch_count", 1}}),
          Entry("epoch_start", nullptr, epoch),
          Entry("epoch_stop", nullptr, epoch),
          Entry("eval_start", nullptr, epoch),
          Entry("eval_stop", nullptr, epoch),
          Entry("eval_accuracy", 0.5, epoch),
          Entry("block_stop", nullptr, {{"first_epoch_num", 1}}),
          Entry("run_stop", nullptr, {{"status", "success"}})};
}

std::string Text(const std::vector<json>& lines) {
  std::string text = "some unrelated line\n";
  for (const json& j : lines) text += ":::MLLOG " + j.dump() + "\n";
  return text;
}

std::vector<json> Without(std::vector<json> lines, const std::string& key) {
  std::vector<json> out;
  for (json& j : lines) {
    if (j["key"] != key) out.push_back(std::move(j));
  }
  return out;
}

json& Find(std::vector<json>& lines, const std::string& key) {
  for (json& j : lines) {
    if (j["key"] == key) return j;
  }
  ADD_FAILURE() << "no " << key;
  return lines.front();
}

// Moves the line with `key` to just before the line with `before`.
std::vector<json> Moved(std::vector<json> lines, const std::string& key,
                        const std::string& before) {
  json moved = Find(lines, key);
  lines = Without(lines, key);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i]["key"] == before) {
      lines.insert(lines.begin() + i, moved);
      break;
    }
  }
  return lines;
}

std::string Joined(const Violations& v) {
  std::string s;
  for (const std::string& line : v) s += line + "\n";
  return s;
}

bool Mentions(const Violations& v, const std::string& text) {
  return Joined(v).find(text) != std::string::npos;
}

TEST(MllogChecker, AcceptsACompleteOpenResnetLog) {
  const Log log = ParseText(Text(GoodLog()));
  EXPECT_EQ(log.lines.size(), GoodLog().size());
  EXPECT_TRUE(CheckAll(log).empty()) << Joined(CheckAll(log));
}

TEST(MllogChecker, ParsingFailsOnBrokenJsonAndOnNoLines) {
  EXPECT_TRUE(
      Mentions(CheckParsing(ParseText("hello\n")), "No log lines detected"));
  const Log log = ParseText(Text(GoodLog()) + ":::MLLOG {\"key\": 1\n");
  EXPECT_TRUE(Mentions(CheckParsing(log), "parsing errors"));
  const Log no_metadata =
      ParseText(":::MLLOG {\"time_ms\": 1, \"key\": \"seed\", \"value\": 1}\n");
  EXPECT_TRUE(Mentions(CheckParsing(no_metadata), "parsing errors"));
}

TEST(MllogChecker, SubmissionKeysAreRequiredOnceWithAllowedValues) {
  EXPECT_TRUE(Mentions(
      CheckSubmission(ParseText(Text(Without(GoodLog(), "submission_org")))),
      "Required EXACTLY_ONE occurrence of 'submission_org' but found 0"));
  std::vector<json> twice = GoodLog();
  twice.push_back(Entry("submission_platform", "again"));
  EXPECT_TRUE(Mentions(CheckSubmission(ParseText(Text(twice))),
                       "'submission_platform' but found 2"));
  std::vector<json> empty = GoodLog();
  Find(empty, "submission_org")["value"] = "";
  EXPECT_TRUE(
      Mentions(CheckSubmission(ParseText(Text(empty))), "v['value'] != ''"));
  std::vector<json> status = GoodLog();
  Find(status, "submission_status")["value"] = "lab";
  EXPECT_TRUE(Mentions(CheckSubmission(ParseText(Text(status))),
                       "'onprem', 'preview', 'research'"));
  std::vector<json> closed = GoodLog();
  Find(closed, "submission_division")["value"] = "closed";
  EXPECT_TRUE(
      Mentions(CheckSubmission(ParseText(Text(closed))), "open_common.yaml"));
  std::vector<json> benchmark = GoodLog();
  Find(benchmark, "submission_benchmark")["value"] = "image_classification";
  EXPECT_TRUE(Mentions(CheckSubmission(ParseText(Text(benchmark))),
                       "v['value'] in ['resnet'"));
  EXPECT_TRUE(Mentions(
      CheckSubmission(ParseText(Text(Without(GoodLog(), "cache_clear")))),
      "AT_LEAST_ONE occurrence of 'cache_clear'"));
}

TEST(MllogChecker, InitAndRunMustComeInOrder) {
  EXPECT_TRUE(CheckInitAndRun(ParseText(Text(GoodLog()))).empty());
  EXPECT_TRUE(Mentions(CheckInitAndRun(ParseText(
                           Text(Moved(GoodLog(), "run_start", "init_stop")))),
                       "not s['run_started']"));
  EXPECT_TRUE(Mentions(CheckInitAndRun(ParseText(
                           Text(Moved(GoodLog(), "init_stop", "init_start")))),
                       "s['init_started']"));
  EXPECT_TRUE(Mentions(
      CheckInitAndRun(ParseText(Text(Without(GoodLog(), "run_start")))),
      "s['run_started']"));
  std::vector<json> no_status = GoodLog();
  Find(no_status, "run_stop")["metadata"].erase("status");
  EXPECT_TRUE(Mentions(CheckInitAndRun(ParseText(Text(no_status))),
                       "'status' in v['metadata']"));
}

TEST(MllogChecker, InitStopNeedsTheDivisionReadFirstAndComesInTime) {
  // Before submission_division is read, compile_time_mins is 0.
  EXPECT_TRUE(Mentions(CheckInitAndRun(ParseText(Text(Moved(
                           GoodLog(), "submission_division", "run_start")))),
                       "compile_time_mins"));
  std::vector<json> slow = GoodLog();
  Find(slow, "init_stop")["time_ms"] = 1000 + 241 * 60 * 1000;
  EXPECT_TRUE(
      Mentions(CheckInitAndRun(ParseText(Text(slow))), "compile_time_mins"));
}

TEST(MllogChecker, BlocksEpochsAndEvalsCarryTheirNumbers) {
  std::vector<json> no_count = GoodLog();
  Find(no_count, "block_start")["metadata"].erase("epoch_count");
  EXPECT_TRUE(Mentions(CheckBlocksEpochsAndEvals(ParseText(Text(no_count))),
                       "'epoch_count' in v['metadata']"));
  std::vector<json> zero = GoodLog();
  Find(zero, "block_start")["metadata"]["epoch_count"] = 0;
  EXPECT_TRUE(Mentions(CheckBlocksEpochsAndEvals(ParseText(Text(zero))),
                       "v['metadata']['epoch_count'] > 0"));
  EXPECT_TRUE(Mentions(CheckBlocksEpochsAndEvals(ParseText(
                           Text(Moved(GoodLog(), "block_start", "run_start")))),
                       "s['run_started']"));
  for (const std::string key : {"epoch_start", "epoch_stop", "eval_start",
                                "eval_stop", "eval_accuracy"}) {
    std::vector<json> lines = GoodLog();
    Find(lines, key)["metadata"].erase("epoch_num");
    EXPECT_TRUE(Mentions(CheckBlocksEpochsAndEvals(ParseText(Text(lines))),
                         "CHECK for '" + key + "'"))
        << key;
  }
  EXPECT_TRUE(Mentions(CheckBlocksEpochsAndEvals(ParseText(Text(Without(
                           Without(GoodLog(), "block_start"), "epoch_start")))),
                       "'block_start' or 'epoch_start'"));
  // One of the pair is enough.
  EXPECT_TRUE(CheckBlocksEpochsAndEvals(
                  ParseText(Text(Without(GoodLog(), "block_start"))))
                  .empty());
}

TEST(MllogChecker, SampleCountsAreRequiredExactlyOnce) {
  EXPECT_TRUE(Mentions(
      CheckSampleCounts(ParseText(Text(Without(GoodLog(), "eval_samples")))),
      "'eval_samples' but found 0"));
  std::vector<json> twice = GoodLog();
  twice.push_back(Entry("train_samples", 3));
  EXPECT_TRUE(Mentions(CheckSampleCounts(ParseText(Text(twice))),
                       "'train_samples' but found 2"));
}

TEST(MllogChecker, ResnetNeedsBatchOptimizerAndHyperparameters) {
  std::vector<json> batch = GoodLog();
  Find(batch, "global_batch_size")["value"] = 0;
  EXPECT_TRUE(Mentions(CheckResnet(ParseText(Text(batch))), "> 0"));
  std::vector<json> as_text = GoodLog();
  Find(as_text, "global_batch_size")["value"] = "64";
  EXPECT_TRUE(Mentions(CheckResnet(ParseText(Text(as_text))), "not a number"));
  std::vector<json> adam = GoodLog();
  Find(adam, "opt_name")["value"] = "adam";
  EXPECT_TRUE(Mentions(CheckResnet(ParseText(Text(adam))),
                       "v['value'] in ['sgd', 'lars']"));
  std::vector<json> accuracy = GoodLog();
  Find(accuracy, "eval_accuracy")["value"] = 87.5;  // a percentage
  EXPECT_TRUE(Mentions(CheckResnet(ParseText(Text(accuracy))), "<= 1.0"));
  for (const std::string key :
       {"opt_base_learning_rate", "opt_learning_rate_warmup_epochs",
        "opt_momentum", "opt_weight_decay", "label_smoothing",
        "gradient_accumulation_steps"}) {
    EXPECT_TRUE(Mentions(CheckResnet(ParseText(Text(Without(GoodLog(), key)))),
                         "'" + key + "' but found 0"))
        << key;
  }
}

TEST(MllogChecker, LarsRunsNeedTheLarsKeys) {
  std::vector<json> lars = GoodLog();
  Find(lars, "opt_name")["value"] = "lars";
  const Violations v = CheckResnet(ParseText(Text(lars)));
  for (const std::string key :
       {"lars_opt_base_learning_rate", "lars_opt_end_learning_rate",
        "lars_opt_learning_rate_warmup_epochs", "lars_opt_momentum",
        "lars_opt_weight_decay", "lars_epsilon",
        "lars_opt_trust_coefficient"}) {
    EXPECT_TRUE(Mentions(v, "'" + key + "' but found 0")) << key;
  }
}

}  // namespace
}  // namespace hpcai500::worker::mllog_checker
