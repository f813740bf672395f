// Numerics of a training run: autocast for bf16/fp16, dynamic loss scaling
// for fp16, the channels-last layout for convolutional models, the
// determinism mode, and how OpenMP's idle threads wait and malloc reuses
// memory.
//
// Thread-safety: autocast and the determinism switches are process-wide
// LibTorch state; use them from the one training thread. A LossScaler is not
// thread-safe.
#ifndef HPCAI500_WORKER_TRAIN_PRECISION_H_
#define HPCAI500_WORKER_TRAIN_PRECISION_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/vocabulary.h"

namespace hpcai500::worker {

// Turns on autocast for the scope when the run's precision asks for it:
// bf16 on CPU or CUDA, fp16 on CUDA (fp32 leaves autocast off). Throws
// std::invalid_argument for fp16 on CPU.
class AutocastScope {
 public:
  AutocastScope(Precision precision, const torch::Device& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  const bool enabled_;
  const bool cuda_;
};

// Dynamic loss scaling as torch.cuda.amp.GradScaler does it: the loss is
// multiplied by the scale before backward; after the gradients are
// all-reduced they are divided by it, and a step whose gradients hold an inf
// or NaN is skipped and halves the scale; `growth_interval` finite steps in a
// row double it. Because the check reads the all-reduced gradients, every
// rank skips the same steps. A disabled scaler (fp32, bf16) has scale 1,
// leaves losses and gradients alone and never skips.
class LossScaler {
 public:
  struct Options {
    double init_scale = 65536.0;  // 2^16
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  // What a checkpoint keeps of a scaler.
  struct State {
    double scale = 1.0;
    int64_t growth_tracker = 0;  // finite steps since the last change
  };

  explicit LossScaler(bool enabled) : LossScaler(enabled, Options()) {}
  LossScaler(bool enabled, Options options);

  // The scaler a precision needs: enabled for fp16 only.
  static LossScaler ForPrecision(Precision precision);

  bool enabled() const { return enabled_; }
  const Options& options() const { return options_; }
  // The current scale; 1 when disabled.
  double scale() const { return enabled_ ? state_.scale : 1.0; }

  // loss * scale (loss itself when disabled).
  torch::Tensor Scale(const torch::Tensor& loss) const;

  // Divides the defined gradients of `params` by the scale, in place, and
  // returns whether every one of them is finite. Disabled: returns true
  // without looking.
  bool UnscaleGradients(const std::vector<torch::Tensor>& params) const;

  // Records the outcome of one step: a non-finite step backs the scale off
  // and restarts the growth count; the growth_interval-th finite step in a
  // row grows the scale. No-op when disabled.
  void Update(bool found_non_finite);

  // One optimizer step the GradScaler way: unscale, step `optimizer` when
  // the gradients are finite, update the scale. Returns whether it stepped.
  bool Step(torch::optim::Optimizer& optimizer,
            const std::vector<torch::Tensor>& params);

  State state() const { return state_; }
  // Restores a checkpointed state. Throws std::invalid_argument when the
  // scale is not finite and positive or the tracker is negative.
  void Restore(const State& state);

 private:
  // Constant after construction.
  bool enabled_;
  Options options_;

  State state_;
};

// Whether a convolutional model trains in channels-last (NHWC) memory
// format: in every precision. Reduced-precision convolutions are fastest
// there, and in fp32 oneDNN's NHWC convolutions and BatchNorm beat NCHW too
// (resnet_small, batch 64, 2 threads: about a quarter less time per step on
// the CI machine, in both LibTorch and PyTorch). `asked` forces it.
bool WantsChannelsLast(Precision precision, bool asked);

// Restrides every 4-D parameter and buffer of `module` to channels-last, in
// place; values, shapes and the tensors' identities are unchanged, so call
// it before an optimizer captures the parameters or after, alike.
void ToChannelsLast(torch::nn::Module& module);

// `x` (4-D) in channels-last layout; other ranks are returned as they are.
torch::Tensor ChannelsLastInput(const torch::Tensor& x);

// Determinism mode: LibTorch's deterministic algorithms (an op without one
// throws instead of running nondeterministically), cuDNN deterministic and
// without autotuning, and `threads` intra-op threads. Together with a fixed
// seed and data order, CPU runs with the same config and thread count give
// bit-identical parameters: each reduction splits its work the same way for
// a given thread count, but a different count may round differently.
void EnableDeterminism(int threads);

// Makes glibc's malloc keep freed memory for reuse: blocks up to 32 MiB come
// from the heap instead of fresh mmap()s, and up to 256 MiB freed at the
// heap's top stays mapped. By default a training step's activations (a few
// MiB each) are mapped, faulted in page by page and unmapped again every
// step (a 30-step resnet_small epoch at 2 threads: 675,000 page faults and
// 8.2 s, against 71,000 and 3.0 s with this). Returns false when glibc
// refused a setting. Call before training; process-wide.
bool KeepFreedMemoryForReuse();

// A 64-bit FNV-1a hash over the bytes of every parameter and buffer of
// `module` (in registration order, each in contiguous CPU layout), as 16 hex
// digits: equal for bit-identical models, whatever their memory format.
std::string ParameterChecksum(const torch::nn::Module& module);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_PRECISION_H_
