// What a test may add to every training step, as an interface the Trainer
// (worker/train/trainer.h) is given once, so that the step itself reads no
// environment: the base class adds nothing. hpcai500-worker builds its hooks
// at the start of a run from the test-only environment variables
// (StepHooksFromEnv): LibTorch warnings on purpose
// (worker/train/test_warnings.h) and a slowdown (worker/test_slowdown.h).
// A test of the trainer itself may give hooks of its own.
//
// Thread-safety: the Trainer calls its hooks from the training thread only.
#ifndef HPCAI500_WORKER_TRAIN_STEP_HOOKS_H_
#define HPCAI500_WORKER_TRAIN_STEP_HOOKS_H_

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "common/vocabulary.h"
#include "worker/flags.h"

namespace hpcai500::worker {

class StepHooks {
 public:
  virtual ~StepHooks() = default;

  // Inside step `step` (0-based) of `epoch` (1-based), on a step with
  // samples or a replay, before its forward pass, on `device` training in
  // `precision`.
  virtual void BeforeForward(const torch::Device& /*device*/,
                             Precision /*precision*/, int /*epoch*/,
                             int64_t /*step*/) {}

  // At the end of every step, which began at `step_start`.
  virtual void AfterStep(std::chrono::steady_clock::time_point /*step_start*/) {
  }
};

// The hooks that the test-only variables of `env` ask for, read once:
// $HPCAI500_TEST_TORCH_WARN, $HPCAI500_TEST_SLOW_STEP_PCT and
// $HPCAI500_TEST_SLOW_WHILE_FILE; with none set, hooks that add nothing.
// Throws std::invalid_argument naming the variable for a value it does not
// take (the warnings' variable first), which ends the run.
std::unique_ptr<StepHooks> StepHooksFromEnv(const EnvLookup& env);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_STEP_HOOKS_H_
