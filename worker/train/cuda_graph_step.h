// --cuda-graph (issue 25, docs/design.md "Fast paths"): the training step
// captured once as a CUDA graph (LibTorch's at::cuda::CUDAGraph) and replayed
// every step after, so that a step costs one graph launch instead of the
// thousands of kernel launches of forward, backward, the gradient all-reduce
// and the optimizer. What it captures is SyncFreeStep
// (worker/train/sync_free_step.h): no host sync inside, the learning rate and
// the loss scale read from device tensors. A graph replays fixed addresses
// and shapes: the batch is copied into static buffers first, and only full
// batches replay (the trainer runs an epoch's last, partial batch eagerly).
//
// Not thread-safe: the training thread drives it.
#ifndef HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_
#define HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_

#include <torch/torch.h>

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

// The steps of an epoch in which every rank's batch is full: the smallest
// shard's full batches (shards of `train_size` samples over `world_size`
// ranks differ by at most one), at most `steps_per_epoch`.
int64_t FullBatchSteps(int64_t train_size, int world_size, int64_t batch_size,
                       int64_t steps_per_epoch);

// How a --cuda-graph run trains step `step` of an epoch, given
// `full_steps` (FullBatchSteps) and this rank's `local` samples of a full
// `batch_size`.
enum class CapturedStepKind {
  kReplay,           // every rank full: the graph (its warm-up, capture)
  kEagerAssumeFull,  // corrupt samples dropped here: eager, same collectives
  kEagerCounted,     // some rank partial: eager, the sample count agreed
  kNoSamples,        // no samples here: its all-reduce part only
};
CapturedStepKind KindOfCapturedStep(int64_t step, int64_t full_steps,
                                    int64_t local, int64_t batch_size);

// Makes a stream of LibTorch's pool the calling thread's current stream on
// `device` for the rest of the process; no-op on the CPU. A graph cannot be
// captured on the default stream, and autograd runs each parameter's
// gradient accumulation on the stream current when its accumulator was made
// (the reducer's hooks make them when it is built), so a run with
// --cuda-graph moves to its one stream before it builds anything.
void UseCaptureStream(const torch::Device& device);

class CudaGraphStep {
 public:
  // Borrows `step` and `reducer` (null: none) for its lifetime. On a CUDA
  // `device` the first `warmup_steps` calls of Run train eagerly, the next
  // one captures the step and replays it; on the CPU every call trains
  // eagerly (what the unit tests run). The current stream must be the one
  // the run uses (UseCaptureStream).
  CudaGraphStep(SyncFreeStep* step, GradientReducer* reducer,
                const torch::Device& device,
                int warmup_steps = kCudaGraphWarmupSteps);
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  // Trains one step on `batch` (images and labels on the device, `local`
  // samples of the `global` all ranks train this step; every rank's batch
  // full). After the capture every batch must have the captured shapes
  // (std::invalid_argument otherwise). Returns the forward pass's FLOPs (a
  // replay repeats the captured step's).
  FlopCount Run(const Batch& batch, int64_t local, int64_t global);

  // Whether the step has been captured (a replay follows every Run).
  bool captured() const { return graph_ != nullptr; }

 private:
  struct Graph;
  void Capture(const Batch& batch, int64_t local, int64_t global);
  void CopyIntoStatic(const Batch& batch);

  // Constant after construction.
  SyncFreeStep* const step_;
  GradientReducer* const reducer_;
  const torch::Device device_;

  int eager_left_;
  std::unique_ptr<Graph> graph_;  // set by Capture
  Batch static_;                  // the inputs the graph reads
  FlopCount flops_;               // of the captured step
  CommStats step_comm_;           // what the captured step sends
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_CUDA_GRAPH_STEP_H_
