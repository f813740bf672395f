#include "worker/train/precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace hpcai500::worker {

namespace {

bool AutocastEnabled(Precision precision, const torch::Device& device) {
  switch (precision) {
    case Precision::kFp32:
      return false;
    case Precision::kBf16:
      return true;
    case Precision::kFp16:
      if (!device.is_cuda()) {
        throw std::invalid_argument(
            "--precision fp16 runs only on --device cuda");
      }
      return true;
  }
  return false;
}

}  // namespace

AutocastScope::AutocastScope(Precision precision, const torch::Device& device)
    : enabled_(AutocastEnabled(precision, device)), cuda_(device.is_cuda()) {
  if (!enabled_) return;
  // The per-device calls of LibTorch 2.4 on (the CPU- and GPU-named ones
  // they replace are deprecated and warn).
  const auto dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kHalf;
  const c10::DeviceType type =
      cuda_ ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, true);
}

AutocastScope::~AutocastScope() {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(
      cuda_ ? c10::DeviceType::CUDA : c10::DeviceType::CPU, false);
  at::autocast::clear_cache();
}

LossScaler::LossScaler(bool enabled, Options options)
    : enabled_(enabled), options_(options) {
  state_.scale = enabled ? options.init_scale : 1.0;
}

LossScaler LossScaler::ForPrecision(Precision precision) {
  return LossScaler(/*enabled=*/precision == Precision::kFp16);
}

torch::Tensor LossScaler::Scale(const torch::Tensor& loss) const {
  if (!enabled_) return loss;
  return loss * state_.scale;
}

bool LossScaler::UnscaleGradients(
    const std::vector<torch::Tensor>& params) const {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  // The scale is a power of two as long as its factors are, so multiplying
  // by the reciprocal is exact, as GradScaler's unscale is.
  const double inverse = 1.0 / state_.scale;
  torch::Tensor non_finite;
  for (const torch::Tensor& p : params) {
    torch::Tensor g = p.grad();
    if (!g.defined()) continue;
    g.mul_(inverse);
    torch::Tensor bad = torch::isfinite(g).logical_not().any();
    non_finite = non_finite.defined() ? non_finite.logical_or(bad) : bad;
  }
  return !non_finite.defined() || !non_finite.item<bool>();
}

void LossScaler::Update(bool found_non_finite) {
  if (!enabled_) return;
  if (found_non_finite) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
    return;
  }
  if (++state_.growth_tracker >= options_.growth_interval) {
    state_.scale *= options_.growth_factor;
    state_.growth_tracker = 0;
  }
}

bool LossScaler::Step(torch::optim::Optimizer& optimizer,
                      const std::vector<torch::Tensor>& params) {
  const bool finite = UnscaleGradients(params);
  if (finite) optimizer.step();
  Update(/*found_non_finite=*/!finite);
  return finite;
}

void LossScaler::Restore(const State& state) {
  if (!std::isfinite(state.scale) || state.scale <= 0 ||
      state.growth_tracker < 0) {
    throw std::invalid_argument(
        "loss scaler state: scale " + std::to_string(state.scale) +
        ", growth tracker " + std::to_string(state.growth_tracker) +
        " (the scale must be finite and positive, the tracker >= 0)");
  }
  state_ = state;
  if (!enabled_) state_.scale = 1.0;
}

bool WantsChannelsLast(Precision /*precision*/, bool /*asked*/) { return true; }

void ToChannelsLast(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  auto restride = [](torch::Tensor& t) {
    if (t.defined() && t.dim() == 4) {
      t.set_data(t.contiguous(at::MemoryFormat::ChannelsLast));
    }
  };
  for (torch::Tensor& p : module.parameters()) restride(p);
  for (torch::Tensor& b : module.buffers()) restride(b);
}

torch::Tensor ChannelsLastInput(const torch::Tensor& x) {
  if (x.dim() != 4) return x;
  return x.contiguous(at::MemoryFormat::ChannelsLast);
}

void EnableDeterminism(int threads) {
  // cuBLAS is deterministic only with a fixed workspace; it reads this when
  // its first handle is created, which comes later.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  at::globalContext().setDeterministicCuDNN(true);
  at::globalContext().setBenchmarkCuDNN(false);
  torch::set_num_threads(threads);
}

bool KeepFreedMemoryForReuse() {
  constexpr int kMmapThreshold = 32 << 20;  // glibc's maximum on 64-bit
  constexpr int kTrimThreshold = 256 << 20;
  // Setting either turns off glibc's own adjustment of both, so set both.
  const bool mmap_set = ::mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim_set = ::mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  return mmap_set && trim_set;
}

std::string ParameterChecksum(const torch::nn::Module& module) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
    for (size_t i = 0; i < n; ++i) {
      hash ^= bytes[i];
      hash *= 1099511628211ull;
    }
  };
  for (const torch::Tensor& p : module.parameters()) mix(p);
  for (const torch::Tensor& b : module.buffers()) mix(b);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace hpcai500::worker
