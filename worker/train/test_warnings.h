// LibTorch warnings on purpose, for tests only: $HPCAI500_TEST_TORCH_WARN=1
// makes the first training steps of every epoch raise warnings inside the
// step's autocast scope, one from inside LibTorch (an out= operator resizing
// its output, which warns every time; meshgrid without indexing, which
// warns once per process) and one with TORCH_WARN from the worker's own code,
// so that a test proves a warning never ends a run (issue 21: every
// mixed-precision step once died in LibTorch's warning path). Like
// worker/test_slowdown.h, no flag or spec field reaches it: the agent passes
// the variable on only when its operator names it with --env; it is read once
// at the start of a run, into the trainer's step hooks
// (worker/train/step_hooks.h).
//
// Thread-safety: call from the training thread (autocast is its state).
#ifndef HPCAI500_WORKER_TRAIN_TEST_WARNINGS_H_
#define HPCAI500_WORKER_TRAIN_TEST_WARNINGS_H_

#include <torch/torch.h>

#include <cstdint>

#include "worker/flags.h"

namespace hpcai500::worker {

inline constexpr char kTestTorchWarnVar[] = "HPCAI500_TEST_TORCH_WARN";
// The steps of each epoch that warn.
inline constexpr int64_t kTestWarningSteps = 2;
// What the worker's own TORCH_WARN says, for tests to find in stderr.
inline constexpr char kTestWarningText[] = "hpcai500 test warning";

// Whether $HPCAI500_TEST_TORCH_WARN asks for the warnings: "1" yes, unset or
// "0" no. Throws std::invalid_argument naming the variable for anything else.
bool TestTorchWarningsRequested(const EnvLookup& env);

// Raises the warnings with tensors on `device`, naming `epoch` and `step`;
// computes nothing the step uses.
void RaiseTestWarnings(const torch::Device& device, int epoch, int64_t step);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_TEST_WARNINGS_H_
