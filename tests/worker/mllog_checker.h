// Our own implementation of the rules MLCommons' compliance checker applies
// to a training log (mlcommons/logging, mlperf_logging/compliance_checker,
// ruleset training_4.0.0: common.yaml, open_common.yaml and the benchmark
// file open_common.yaml enqueues, here `resnet`). The Python checker cannot
// be installed on CI, so the tests check a worker's log with this instead.
// Each rule family returns its violations, each quoting the rule as the
// rule file states it; an empty list means the family passes.
//
// Semantics follow the Python checker: lines are the ":::MLLOG {json}" ones
// (the token may follow other text), checked in log order with shared state;
// keys a rule file does not name are ignored; EXACTLY_ONE / AT_LEAST_ONE
// count occurrences after the pass.
//
// Thread-safe: pure functions of their arguments.
#ifndef HPCAI500_TESTS_WORKER_MLLOG_CHECKER_H_
#define HPCAI500_TESTS_WORKER_MLLOG_CHECKER_H_

#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hpcai500::worker::mllog_checker {

struct Line {
  int lineno = 0;  // position among the ":::MLLOG" lines, from 0
  double time_ms = 0;
  std::string key;
  nlohmann::json value;
  nlohmann::json metadata;  // an object (the parser requires it)
};

struct Log {
  std::vector<Line> lines;
  // Lines with the token that do not parse (bad JSON, missing time_ms, key,
  // value or metadata): the Python checker fails a log with any of these.
  std::vector<std::string> parse_errors;
};

// Reads every line of `in` holding ":::MLLOG ".
Log Parse(std::istream& in);
Log ParseText(const std::string& text);

using Violations = std::vector<std::string>;

// The log's lines parse ("Log lines had parsing errors") and there is at
// least one ("No log lines detected").
Violations CheckParsing(const Log& log);

// common.yaml: submission_org and submission_platform exactly once and not
// empty; submission_division exactly once, "closed" or "open" (here: open,
// the division we submit to); submission_status exactly once, in {cloud,
// onprem, preview, research}; cache_clear at least once with a value.
// open_common.yaml: submission_benchmark exactly once, in the 4.0.0 list
// (here: "resnet").
Violations CheckSubmission(const Log& log);

// common.yaml: init_start at least once, never after init_stop or
// run_start; init_stop exactly once, after an init_start, before run_start
// and within compile_time_mins (240 in the open division, set only once
// submission_division has been read, so that line must come first) of the
// first init_start; run_start exactly once after init_stop; run_stop
// exactly once after run_start with metadata.status.
Violations CheckInitAndRun(const Log& log);

// common.yaml: block_start (or epoch_start) at least once, after run_start,
// with epoch_count > 0 and first_epoch_num; block_stop with
// first_epoch_num; epoch_start / epoch_stop with epoch_num; eval_start /
// eval_stop / eval_accuracy with epoch_num; eval_accuracy at least once.
// (The two stored revisions of 4.0.0's common.yaml accept samples_count or
// step_num instead of epoch_count; we require epoch_count, which both
// accept.)
Violations CheckBlocksEpochsAndEvals(const Log& log);

// common.yaml: train_samples and eval_samples exactly once each, with a
// value.
Violations CheckSampleCounts(const Log& log);

// The benchmark file of resnet. training_4.0.0/open_resnet.yaml is not in
// the reference index we can read. The 4.0.0 open benchmark file that is
// (open_dlrm_dcnv2.yaml) asks only for eval_accuracy at least once, with
// epoch_num in its metadata and at least one value <= 1.0; we check that and
// more, taking closed_resnet.yaml (3.1.0) minus the quality target:
// global_batch_size exactly
// once and > 0; opt_name exactly once, "sgd" or "lars"; eval_accuracy with
// epoch_num and a value in [0, 1]. Plus the hyperparameters the worker writes
// under MLPerf's names: opt_base_learning_rate > 0,
// opt_learning_rate_warmup_epochs >= 0, opt_momentum >= 0, opt_weight_decay
// >= 0, label_smoothing in [0, 1), gradient_accumulation_steps > 0 (a
// closed_common.yaml rule), each exactly once; with opt_name "lars" also
// lars_opt_base_learning_rate > 0, lars_opt_end_learning_rate >= 0,
// lars_opt_learning_rate_warmup_epochs >= 0, lars_opt_momentum > 0,
// lars_opt_weight_decay > 0, lars_epsilon >= 0 (0.7.0's resnet_lars.yaml
// names) and lars_opt_trust_coefficient > 0.
Violations CheckResnet(const Log& log);

// All of the above, in order.
Violations CheckAll(const Log& log);

}  // namespace hpcai500::worker::mllog_checker

#endif  // HPCAI500_TESTS_WORKER_MLLOG_CHECKER_H_
