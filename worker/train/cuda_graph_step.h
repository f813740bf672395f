// --cuda-graph (issue 25, docs/design.md "Fast paths"): the training step
// captured once as a CUDA graph (LibTorch's at::cuda::CUDAGraph) and replayed
// every step after, so that a step costs one graph launch instead of the
// thousands of kernel launches of forward, backward, the gradient all-reduce
// and the optimizer. What it captures is SyncFreeStep
// (worker/train/sync_free_step.h): no host sync inside, the learning rate and
// the loss scale read from device tensors. A graph replays fixed addresses
// and shapes: the batch is copied into static buffers first. Every step of
// the epoch's full steps (KindOfStep's kFull) replays on every rank: a rank
// that dropped corrupt samples copies in the rows it has and labels the
// rest kIgnoredLabel, which the loss masks (their stale images still reach
// BatchNorm's batch statistics), so no rank runs eagerly while another
// replays. The epoch's last, partial step runs eagerly on every rank.
//
// Not thread-safe: the training thread drives it.
#ifndef HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_
#define HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "worker/data/dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/flags.h"
#include "worker/metrics/flops.h"
#include "worker/train/sync_free_step.h"

namespace hpcai500::worker {

// Eager steps before the capture: cuDNN picks its algorithms, NCCL and the
// caching allocator set up, autograd makes its accumulators, all outside the
// graph (PyTorch's own whole-network capture recipe warms up 3 steps).
inline constexpr int kCudaGraphWarmupSteps = 3;

// Why --cuda-graph cannot work for `options`, naming the flag; "" when it
// can (or is off). It needs a classifier (the detector's step has
// data-dependent shapes and host-side decisions: proposals, sampling), NCCL
// between ranks (Gloo's collectives run on host threads and cannot be
// captured) and no PowerSGD (its warm-up switch and orthogonalisation
// decide on the host every step).
std::string CheckCudaGraph(const WorkerOptions& options);

// The inputs a captured step reads: `batch_size` samples of `sample_shape`
// ({C, H, W}), channels-last when `channels_last`.
struct StaticBatchShape {
  int64_t batch_size = 0;
  std::array<int64_t, 3> sample_shape{};
  bool channels_last = false;
};

// Makes a stream of LibTorch's pool the calling thread's current stream on
// `device` for the rest of the process; no-op on the CPU. A graph cannot be
// captured on the default stream, and autograd runs each parameter's
// gradient accumulation on the stream current when its accumulator was made
// (the reducer's hooks make them when it is built), so a run with
// --cuda-graph moves to its one stream before it builds anything.
void UseCaptureStream(const torch::Device& device);

class CudaGraphStep {
 public:
  // Borrows `step` and `reducer` (null: none) for its lifetime; makes the
  // static inputs of `shape` on `device`. On a CUDA `device` the first
  // `warmup_steps` calls of Run train eagerly, the next one captures the
  // step and replays it; on the CPU every call trains eagerly on the static
  // inputs, masking included (what the unit tests run). The current stream
  // must be the one the run uses (UseCaptureStream). Throws
  // std::invalid_argument for a batch size below 1.
  CudaGraphStep(SyncFreeStep* step, GradientReducer* reducer,
                const torch::Device& device, const StaticBatchShape& shape,
                int warmup_steps = kCudaGraphWarmupSteps);
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  // Trains one full step (KindOfStep's kFull) on `batch` (images and labels
  // on the device; `local` samples, 0 to the batch size; with none the
  // batch may be empty), weighted as one of `global` samples that all ranks
  // train this step, `local` of them here. Rows past `local` are masked.
  // std::invalid_argument for a batch whose samples are not the static
  // shape's, or more of them. Returns the forward pass's FLOPs for the
  // static batch (a replay repeats the captured step's); the caller counts
  // `local` samples of them.
  FlopCount Run(const Batch& batch, int64_t local, int64_t global);

  // Whether the step has been captured (a replay follows every Run).
  bool captured() const { return graph_ != nullptr; }

 private:
  struct Graph;
  void Capture(int64_t global);
  void CopyIntoStatic(const Batch& batch, int64_t local);

  // Constant after construction.
  SyncFreeStep* const step_;
  GradientReducer* const reducer_;
  const torch::Device device_;
  Batch static_;  // the inputs the graph reads; their contents change

  int eager_left_;
  std::unique_ptr<Graph> graph_;  // set by Capture
  FlopCount flops_;               // of the captured step
  CommStats step_comm_;           // what the captured step sends
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_
