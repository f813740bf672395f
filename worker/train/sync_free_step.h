// The training step without host synchronisation: the trainer's step
// (worker/train/trainer.cc) in every run, and what --cuda-graph captures once
// and replays (worker/train/cuda_graph_step.h). It keeps the recipe of
// LibTorch's SGD and the GradScaler-style LossScaler (worker/train/
// precision.h, the reference its tests hold it to) with everything they read
// back or decide on the host moved to the device. The learning rate, and for
// fp16 the loss scale, its growth count and the overflow flag, are device
// tensors that the optimizer step reads; the loss is summed on the device and
// read once per epoch; SGD and LARS step with LibTorch's fused multi-tensor
// SGD, which takes the learning rate as a tensor and skips the step on the
// device when the overflow flag is set. On the CPU it runs eagerly, which is
// how the unit tests hold it to the plain step.
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
  // Told each phase of an eager step (null: none); a replay sets none.
  StallWatchdog* watchdog = nullptr;
};

// What an epoch of sync-free steps adds up to, read in one synchronisation.
struct SyncFreeTotals {
  double loss_sum = 0;  // sum over steps of loss * samples
  int64_t skipped_steps = 0;
};

// The steps of an epoch in which every rank's batch is full: the smallest
// shard's full batches (shards of `train_size` samples over `world_size`
// ranks differ by at most one), at most `steps_per_epoch`.
int64_t FullBatchSteps(int64_t train_size, int world_size, int64_t batch_size,
                       int64_t steps_per_epoch);

// How a rank trains step `step` of an epoch, given `full_steps`
// (FullBatchSteps) and its `local` samples. Every rank makes the same
// choice for a step whatever its own samples, so the ranks' collectives
// always match: no per-step collective where the count is known, and a
// --cuda-graph run's captured collectives never meet eager ones.
enum class StepKind {
  // Every rank's batch is full, but for corrupt samples a rank dropped: the
  // global count is batch size x ranks, known without a collective (a
  // dropped sample weighs as a sample with no gradient); --cuda-graph
  // replays, the dropped rows masked.
  kFull,
  // Past the smallest shard's full batches: eager, the global count agreed
  // by a collective (the epoch's last step, usually).
  kCounted,
  // The same, with no samples on this rank: its all-reduce part only.
  kNoSamples,
};
StepKind KindOfStep(int64_t step, int64_t full_steps, int64_t local);

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
  // Names `phase` (a string literal) to the watchdog, if any.
  void SetPhase(const char* phase);

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
