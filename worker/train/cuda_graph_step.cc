#include "worker/train/cuda_graph_step.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>
#include <utility>

#include "worker/models/model_zoo.h"
#include "worker/train/task.h"

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

void UseCaptureStream(const torch::Device& device) {
  if (!device.is_cuda()) return;
  c10::cuda::setCurrentCUDAStream(
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
}

struct CudaGraphStep::Graph {
  at::cuda::CUDAGraph graph;
};

// The static inputs of `shape` on `device`: zero images, every label
// masked until a batch is copied in.
Batch StaticBatch(const StaticBatchShape& shape, const torch::Device& device) {
  if (shape.batch_size < 1) {
    throw std::invalid_argument("--cuda-graph: a batch size of " +
                                std::to_string(shape.batch_size));
  }
  const auto& [c, h, w] = shape.sample_shape;
  Batch batch;
  batch.images =
      torch::zeros({shape.batch_size, c, h, w},
                   torch::TensorOptions().device(device).memory_format(
                       shape.channels_last ? torch::MemoryFormat::ChannelsLast
                                           : torch::MemoryFormat::Contiguous));
  batch.labels =
      torch::full({shape.batch_size}, kIgnoredLabel,
                  torch::TensorOptions().dtype(torch::kInt64).device(device));
  batch.masked = true;
  return batch;
}

CudaGraphStep::CudaGraphStep(SyncFreeStep* step, GradientReducer* reducer,
                             const torch::Device& device,
                             const StaticBatchShape& shape, int warmup_steps)
    : step_(step),
      reducer_(reducer),
      device_(device),
      static_(StaticBatch(shape, device)),
      eager_left_(warmup_steps) {}

CudaGraphStep::~CudaGraphStep() = default;

FlopCount CudaGraphStep::Run(const Batch& batch, int64_t local,
                             int64_t global) {
  CopyIntoStatic(batch, local);
  // The static batch counts as full: its masked rows add nothing to the loss,
  // which divides by the whole batch (CrossEntropyLoss), so each real sample
  // weighs 1 / global as in an eager step of `local` samples.
  const int64_t full = static_.size();
  if (!device_.is_cuda() || eager_left_ > 0) {
    if (eager_left_ > 0) --eager_left_;
    return step_->Step(static_, full, global);
  }
  if (graph_ == nullptr) Capture(global);
  // Capturing ran nothing: the captured step's first replay is this step.
  graph_->graph.replay();
  if (reducer_ != nullptr) reducer_->CountReplayedStep(step_comm_);
  return flops_;
}

void CudaGraphStep::Capture(int64_t global) {
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
    flops_ = step_->Step(static_, static_.size(), global, /*reset_grads=*/true);
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

void CudaGraphStep::CopyIntoStatic(const Batch& batch, int64_t local) {
  const int64_t full = static_.size();
  const bool fits =
      local >= 0 && local <= full &&
      (local == 0 ||
       (batch.images.dim() == 4 && batch.images.size(0) >= local &&
        batch.images.sizes().slice(1).equals(static_.images.sizes().slice(1)) &&
        batch.labels.dim() == 1 && batch.labels.size(0) >= local));
  if (!fits) {
    throw std::invalid_argument(
        "--cuda-graph: " + std::to_string(local) + " samples of images " +
        (batch.images.defined() ? ShapeText(batch.images) : "[]") +
        " and labels " +
        (batch.labels.defined() ? ShapeText(batch.labels) : "[]") +
        " for the captured " + ShapeText(static_.images) + " and " +
        ShapeText(static_.labels));
  }
  torch::NoGradGuard no_grad;
  if (local > 0) {
    static_.images.narrow(0, 0, local)
        .copy_(batch.images.narrow(0, 0, local),
               /*non_blocking=*/true);
    static_.labels.narrow(0, 0, local)
        .copy_(batch.labels.narrow(0, 0, local),
               /*non_blocking=*/true);
  }
  if (local < full)
    static_.labels.narrow(0, local, full - local).fill_(kIgnoredLabel);
}

}  // namespace hpcai500::worker
