// Runs for the tests of `hpcai500 regress` (tests/cli/regress): succeeded
// runs of one small spec with the score and epochs a test asks for.
#ifndef HPCAI500_TESTS_CLI_REGRESS_TEST_RUNS_H_
#define HPCAI500_TESTS_CLI_REGRESS_TEST_RUNS_H_

#include <cstdint>

#include "proto/hpcai500.pb.h"

namespace hpcai500::testing {

// The spec of every test run: a one-rank CPU smoke run.
inline v1::RunSpec SmokeSpec() {
  v1::RunSpec spec;
  spec.set_name("fmnist-nightly");
  spec.set_workload("image_classification");
  spec.set_config("fashion_mnist_smoke");
  spec.set_level("system");
  spec.set_nodes(1);
  spec.set_ranks_per_node(1);
  spec.set_device("cpu");
  spec.set_batch_size(64);
  spec.set_precision("fp32");
  spec.set_compression("none");
  spec.set_epochs(1);
  spec.set_system("ci-cpu");
  spec.set_seed(7);
  return spec;
}

// A succeeded run of SmokeSpec: `throughput` samples/s over 10 s of training.
inline v1::Run ScoredRun(int64_t id, double throughput,
                         double valid_flops = 1e9, double quality = 0.8,
                         bool reached = true) {
  v1::Run run;
  run.set_id(id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  *run.mutable_spec() = SmokeSpec();
  v1::Score* score = run.mutable_score();
  score->set_samples(static_cast<int64_t>(throughput * 10));
  score->set_train_seconds(10);
  score->set_flops(2 * valid_flops);
  score->set_valid_flops(valid_flops);
  score->set_quality(quality);
  score->set_target(0.7);
  score->set_reached_target(reached);
  return run;
}

// ScoredRun with epochs of `epoch_seconds` each, the target (0.7) first
// reached after epoch `reached_after` (0: never).
inline v1::Run RunWithEpochs(int64_t id, double epoch_seconds,
                             int reached_after) {
  v1::Run run = ScoredRun(id, 100);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    v1::EpochSummary* summary = run.add_epochs();
    summary->set_epoch(epoch);
    summary->set_seconds(epoch_seconds);
    summary->set_accuracy(reached_after > 0 && epoch >= reached_after ? 0.75
                                                                      : 0.5);
  }
  return run;
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_CLI_REGRESS_TEST_RUNS_H_
