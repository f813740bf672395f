#include "worker/train/cuda_graph_step.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "worker/data/sharding.h"
#include "worker/models/model_zoo.h"

namespace hpcai500::worker {

namespace {

std::string ShapeText(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(t.size(i));
  }
  return text + "]";
}

// Turns off autocast's cache of cast weights for the capture: a cast made
// by an eager step before it would be read by every replay, stale.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  const bool was_;
};

}  // namespace

std::string CheckCudaGraph(const WorkerOptions& options) {
  if (!options.args.cuda_graph.value_or(false)) return "";
  const ConfigInfo& c = options.config;
  if (!IsClassifier(c.model)) {
    return "--cuda-graph captures the image classification step only; " +
           c.model +
           " has data-dependent shapes and host-side decisions in its step";
  }
  if (options.world_size > 1 && options.args.dist_backend.value_or(
                                    DistBackend::kNccl) == DistBackend::kGloo) {
    return "--cuda-graph needs --dist-backend nccl between ranks: Gloo's "
           "all-reduce runs on host threads and cannot be captured";
  }
  if (options.args.compression.value_or(Compression::kNone) ==
      Compression::kPowerSgd) {
    return "--cuda-graph cannot capture --compression powersgd: its warm-up "
           "switch and orthogonalisation decide on the host every step; use "
           "none, fp16 or bf16";
  }
  return "";
}

int64_t FullBatchSteps(int64_t train_size, int world_size, int64_t batch_size,
                       int64_t steps_per_epoch) {
  const int64_t smallest = ShardSize(train_size, world_size - 1, world_size);
  return std::min(steps_per_epoch, smallest / batch_size);
}

CapturedStepKind KindOfCapturedStep(int64_t step, int64_t full_steps,
                                    int64_t local, int64_t batch_size) {
  if (local == 0) return CapturedStepKind::kNoSamples;
  if (step >= full_steps) return CapturedStepKind::kEagerCounted;
  return local == batch_size ? CapturedStepKind::kReplay
                             : CapturedStepKind::kEagerAssumeFull;
}

void UseCaptureStream(const torch::Device& device) {
  if (!device.is_cuda()) return;
  c10::cuda::setCurrentCUDAStream(
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
}

struct CudaGraphStep::Graph {
  at::cuda::CUDAGraph graph;
};

CudaGraphStep::CudaGraphStep(SyncFreeStep* step, GradientReducer* reducer,
                             const torch::Device& device, int warmup_steps)
    : step_(step),
      reducer_(reducer),
      device_(device),
      eager_left_(warmup_steps) {}

CudaGraphStep::~CudaGraphStep() = default;

FlopCount CudaGraphStep::Run(const Batch& batch, int64_t local,
                             int64_t global) {
  if (!device_.is_cuda() || eager_left_ > 0) {
    if (eager_left_ > 0) --eager_left_;
    return step_->Step(batch, local, global);
  }
  if (graph_ == nullptr) {
    Capture(batch, local, global);
  } else {
    CopyIntoStatic(batch);
  }
  // Capturing ran nothing: the captured step's first replay is this step.
  graph_->graph.replay();
  if (reducer_ != nullptr) reducer_->CountReplayedStep(step_comm_);
  return flops_;
}

void CudaGraphStep::Capture(const Batch& batch, int64_t local, int64_t global) {
  // Clones keep the layout (channels-last) the task gave the batch.
  static_.images = batch.images.clone();
  static_.labels = batch.labels.clone();
  // The eager steps' cached blocks go back to the driver before the graph
  // takes its own pool, as torch.cuda.graph does.
  torch::cuda::synchronize(device_.index());
  c10::cuda::CUDACachingAllocator::emptyCache();
  const CommStats before =
      reducer_ != nullptr ? reducer_->stats() : CommStats{};
  auto graph = std::make_unique<Graph>();
  {
    AutocastCacheOff no_cache;
    // Thread-local mode: the worker's other threads (data readers, the
    // energy poller, NCCL's watchdog) may call the CUDA runtime meanwhile
    // without invalidating the capture; kernels reach the graph by stream,
    // whichever thread (autograd's) launches them.
    graph->graph.capture_begin(/*pool=*/{0, 0},
                               cudaStreamCaptureModeThreadLocal);
    // Gradients reset to none inside the capture: backward allocates them
    // from the graph's pool, where every replay writes them again.
    flops_ = step_->Step(static_, local, global, /*reset_grads=*/true);
    graph->graph.capture_end();
  }
  if (reducer_ != nullptr) {
    const CommStats after = reducer_->stats();
    step_comm_.bytes = after.bytes - before.bytes;
    step_comm_.buckets = after.buckets - before.buckets;
    step_comm_.buckets_early = after.buckets_early - before.buckets_early;
  }
  graph_ = std::move(graph);
}

void CudaGraphStep::CopyIntoStatic(const Batch& batch) {
  if (!batch.images.sizes().equals(static_.images.sizes()) ||
      !batch.labels.sizes().equals(static_.labels.sizes())) {
    throw std::invalid_argument(
        "--cuda-graph: a batch of images " + ShapeText(batch.images) +
        " and labels " + ShapeText(batch.labels) + " after capturing " +
        ShapeText(static_.images) + " and " + ShapeText(static_.labels));
  }
  static_.images.copy_(batch.images, /*non_blocking=*/true);
  static_.labels.copy_(batch.labels, /*non_blocking=*/true);
}

}  // namespace hpcai500::worker
