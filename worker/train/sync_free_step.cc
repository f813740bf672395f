#include "worker/train/sync_free_step.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "worker/data/sharding.h"

namespace hpcai500::worker {

int64_t FullBatchSteps(int64_t train_size, int world_size, int64_t batch_size,
                       int64_t steps_per_epoch) {
  const int64_t smallest = ShardSize(train_size, world_size - 1, world_size);
  return std::min(steps_per_epoch, smallest / batch_size);
}

StepKind KindOfStep(int64_t step, int64_t full_steps, int64_t local) {
  if (step < full_steps) return StepKind::kFull;
  return local > 0 ? StepKind::kCounted : StepKind::kNoSamples;
}

SyncFreeStep::SyncFreeStep(const StepParts& parts)
    : parts_(parts),
      lars_(parts.optimizer != nullptr ? LarsOf(*parts.optimizer)
                                       : std::nullopt) {
  if (parts_.task == nullptr || parts_.optimizer == nullptr ||
      parts_.scaler == nullptr) {
    throw std::invalid_argument(
        "a sync-free step needs a task, an optimizer and a loss scaler");
  }
  torch::NoGradGuard no_grad;
  const auto f32 =
      torch::TensorOptions().dtype(torch::kFloat32).device(parts_.device);
  lr_ = torch::zeros({}, f32);
  found_inf_ = torch::zeros({}, f32);
  skipped_ = torch::zeros({}, f32);
  loss_sum_ = torch::zeros({}, f32.dtype(torch::kFloat64));
  if (parts_.scaler->enabled()) {
    const LossScaler::State state = parts_.scaler->state();
    scale_ = torch::full({}, state.scale, f32);
    growth_tracker_ =
        torch::full({}, state.growth_tracker, f32.dtype(torch::kInt32));
  }
  // Every buffer exists before the first step, so a captured step finds
  // them at fixed addresses.
  for (auto& group : parts_.optimizer->param_groups()) {
    const auto& options =
        static_cast<const torch::optim::SGDOptions&>(group.options());
    if (options.momentum() == 0) continue;
    for (const torch::Tensor& p : group.params()) MomentumBuffer(p);
  }
}

void SyncFreeStep::SetLearningRate(double lr) { lr_.fill_(lr); }

FlopCount SyncFreeStep::Step(const Batch& batch, int64_t local,
                             std::optional<int64_t> global, bool reset_grads) {
  if (reset_grads) parts_.optimizer->zero_grad();
  if (parts_.reducer != nullptr) {
    SetPhase("gradient all-reduce (sample count)");
    parts_.reducer->BeginStep(local, global);
  }
  SetPhase("forward and backward");
  FlopCount forward;
  torch::Tensor loss;
  {
    AutocastScope autocast(parts_.precision, parts_.device);
    loss = parts_.task->Loss(batch, &forward);
  }
  (parts_.scaler->enabled() ? loss * scale_ : loss).backward();
  {
    torch::NoGradGuard no_grad;
    // In double, as the plain step adds loss.item<double>() * local.
    loss_sum_.add_(
        loss.detach().to(torch::kFloat64).mul(static_cast<double>(local)));
  }
  if (parts_.reducer != nullptr) {
    SetPhase("gradient all-reduce");
    parts_.reducer->FinishStep();
  }
  OptimizerStep();
  return forward;
}

void SyncFreeStep::StepWithoutSamples(std::optional<int64_t> global) {
  parts_.optimizer->zero_grad();
  if (parts_.reducer != nullptr) {
    SetPhase("gradient all-reduce (no samples)");
    parts_.reducer->BeginStep(/*local_samples=*/0, global);
    parts_.reducer->FinishStep();
  }
  OptimizerStep();
}

void SyncFreeStep::SetPhase(const char* phase) {
  if (parts_.watchdog != nullptr) parts_.watchdog->SetPhase(phase);
}

void SyncFreeStep::OptimizerStep() {
  SetPhase("optimizer step");
  torch::NoGradGuard no_grad;
  const bool scaling = parts_.scaler->enabled();
  if (scaling) {
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : parts_.task->module().parameters()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
    // Unscaling multiplies by 1 / scale and sets found_inf_ where a value
    // is not finite, on the device, as GradScaler does.
    found_inf_.zero_();
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_,
                                                   scale_.reciprocal());
  }
  auto& groups = parts_.optimizer->param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    // LARS scales the first group only (optimizer.h).
    StepGroup(groups[i], i == 0 ? lars_ : std::nullopt);
  }
  if (scaling) {
    skipped_.add_(found_inf_);
    const LossScaler::Options& o = parts_.scaler->options();
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, o.growth_factor,
                           o.backoff_factor, o.growth_interval);
  }
}

void SyncFreeStep::StepGroup(torch::optim::OptimizerParamGroup& group,
                             const std::optional<LarsSettings>& lars) {
  const auto& options =
      static_cast<const torch::optim::SGDOptions&>(group.options());
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> grads;
  std::vector<torch::Tensor> buffers;
  for (const torch::Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    params.push_back(p);
    grads.push_back(p.grad());
    if (options.momentum() != 0) buffers.push_back(MomentumBuffer(p));
  }
  if (params.empty()) return;
  if (lars) {
    const torch::Tensor trust =
        LarsTrust(at::stack(at::_foreach_norm(params)),
                  at::stack(at::_foreach_norm(grads)), *lars);
    at::_foreach_add_(grads, params, lars->weight_decay);
    at::_foreach_mul_(grads, trust.unbind());
  }
  // One multi-tensor kernel: weight decay, momentum, the update by the
  // device learning rate; nothing at all where found_inf_ is set. The
  // buffers exist, so no step is a "first step".
  at::_fused_sgd_(
      params, grads, buffers, options.weight_decay(), options.momentum(), lr_,
      options.dampening(), options.nesterov(), /*maximize=*/false,
      /*is_first_step=*/false, /*grad_scale=*/std::nullopt,
      parts_.scaler->enabled() ? std::optional<torch::Tensor>(found_inf_)
                               : std::nullopt);
}

torch::Tensor& SyncFreeStep::MomentumBuffer(const torch::Tensor& param) {
  auto& state = parts_.optimizer->state();
  auto& entry = state[param.unsafeGetTensorImpl()];
  if (entry == nullptr) {
    auto fresh = std::make_unique<torch::optim::SGDParamState>();
    fresh->momentum_buffer(torch::zeros_like(param));
    entry = std::move(fresh);
  }
  auto& sgd = static_cast<torch::optim::SGDParamState&>(*entry);
  // The fused kernel walks a parameter, its gradient and its buffer as flat
  // memory: a buffer restored in another layout is restrided like the
  // parameter (channels-last), values unchanged.
  if (sgd.momentum_buffer().strides() != param.strides()) {
    sgd.momentum_buffer(torch::empty_like(param).copy_(sgd.momentum_buffer()));
  }
  return sgd.momentum_buffer();
}

SyncFreeTotals SyncFreeStep::TakeTotals() {
  SyncFreeTotals totals;
  totals.loss_sum = loss_sum_.item<double>();
  totals.skipped_steps = static_cast<int64_t>(skipped_.item<double>());
  loss_sum_.zero_();
  skipped_.zero_();
  if (parts_.scaler->enabled()) {
    parts_.scaler->Restore(
        {scale_.item<double>(), growth_tracker_.item<int64_t>()});
  }
  return totals;
}

}  // namespace hpcai500::worker
