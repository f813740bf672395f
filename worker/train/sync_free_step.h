// The training step without host synchronisation (--cuda-graph, issue 25):
// the same recipe as the trainer's plain step (worker/train/trainer.cc), with
// everything that step reads back or decides on the host moved to the
// device, so that the step can be captured once as a CUDA graph and replayed
// (worker/train/cuda_graph_step.h). The learning rate, and for fp16 the loss
// scale, its growth count and the overflow flag, are device tensors that the
// optimizer step reads; the loss is summed on the device and read once per
// epoch; SGD and LARS step with LibTorch's fused multi-tensor SGD, which
// takes the learning rate as a tensor and skips the step on the device when
// the overflow flag is set. On the CPU it runs eagerly, which is how the unit
// tests hold it to the plain step.
//
// Not thread-safe: the training thread drives it.
#ifndef HPCAI500_WORKER_TRAIN_SYNC_FREE_STEP_H_
#define HPCAI500_WORKER_TRAIN_SYNC_FREE_STEP_H_

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/vocabulary.h"
#include "worker/data/dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/metrics/flops.h"
#include "worker/train/optimizer.h"
#include "worker/train/precision.h"
#include "worker/train/task.h"

namespace hpcai500::worker {

// What one step works on, all borrowed for the step's lifetime. `reducer`
// may be null (a test of one rank).
struct StepParts {
  Task* task = nullptr;
  torch::optim::SGD* optimizer = nullptr;  // from MakeOptimizer
  LossScaler* scaler = nullptr;            // the run's; kept in step per epoch
  GradientReducer* reducer = nullptr;
  Precision precision = Precision::kFp32;
  torch::Device device = torch::kCPU;
};

// What an epoch of sync-free steps adds up to, read in one synchronisation.
struct SyncFreeTotals {
  double loss_sum = 0;  // sum over steps of loss * samples
  int64_t skipped_steps = 0;
};

class SyncFreeStep {
 public:
  // Takes the scaler's state and the optimizer's momentum buffers as they are
  // now (after a resumed checkpoint), creating zero buffers for parameters
  // without one: a zero buffer after its first update equals the clone that
  // SGD's first step makes. Throws std::invalid_argument when a part is
  // missing.
  explicit SyncFreeStep(const StepParts& parts);
  SyncFreeStep(const SyncFreeStep&) = delete;
  SyncFreeStep& operator=(const SyncFreeStep&) = delete;

  // The learning rate of the next steps: a device-side fill, no sync.
  void SetLearningRate(double lr);

  // One training step on `batch` (on the device, `local` samples):
  // gradients reset to none, forward and backward under autocast with the
  // scaled loss, the gradient all-reduce (the global sample count is
  // `global` when given, else agreed with the other ranks, which syncs),
  // then unscale, LARS trust ratios and the fused SGD step, all on the
  // device. Returns the forward pass's FLOPs. `reset_grads` false leaves the
  // gradients' tensors in place (a captured step must reuse them).
  FlopCount Step(const Batch& batch, int64_t local,
                 std::optional<int64_t> global, bool reset_grads = true);

  // The step of a rank without samples (its shard ran out, or every sample
  // of its batch was corrupt): its part of the all-reduce (zeros; the global
  // count `global`, else agreed with the others) and the optimizer step, as
  // the plain step does without a batch.
  void StepWithoutSamples(std::optional<int64_t> global);

  // The optimizer half of Step: unscale and check (fp16), LARS, fused SGD
  // over the defined gradients, the scale update. For tests that set the
  // gradients themselves.
  void OptimizerStep();

  // Reads the totals since the last call (one sync), zeroes them, and writes
  // the device's loss scale and growth count back into the run's LossScaler
  // so that a checkpoint and the epoch's statistics see them.
  SyncFreeTotals TakeTotals();

 private:
  // Per parameter group of the optimizer: its parameters with a gradient,
  // their momentum buffers, and its settings.
  void StepGroup(torch::optim::OptimizerParamGroup& group,
                 const std::optional<LarsSettings>& lars);
  torch::Tensor& MomentumBuffer(const torch::Tensor& param);

  // Constant after construction.
  const StepParts parts_;
  const std::optional<LarsSettings> lars_;

  // Device tensors, updated in place so a captured graph keeps reading them.
  torch::Tensor lr_;              // float32 scalar
  torch::Tensor scale_;           // float32 scalar (fp16 only)
  torch::Tensor growth_tracker_;  // int32 scalar (fp16 only)
  torch::Tensor found_inf_;       // float32 scalar, 1 when skipped
  torch::Tensor skipped_;         // float32 count of skipped steps
  torch::Tensor loss_sum_;        // float64
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_SYNC_FREE_STEP_H_
