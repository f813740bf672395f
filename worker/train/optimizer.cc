#include "worker/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "worker/events/mllog_keys.h"
#include "worker/models/model_zoo.h"

namespace hpcai500::worker {

namespace {

// LARS (layer-wise adaptive rate scaling) as MLPerf's ResNet reference uses
// it: each parameter of the first group (conv and linear weights) has its
// gradient replaced by trust * (g + wd * w), trust = eta * |w| /
// (|g| + wd * |w|) (1 when either norm is 0), before SGD's momentum step;
// the second group (biases, BatchNorm) is plain SGD without weight decay.
// Momentum follows PyTorch's convention (lr applied after the buffer).
class Lars final : public torch::optim::SGD {
 public:
  Lars(std::vector<torch::optim::OptimizerParamGroup> groups,
       torch::optim::SGDOptions defaults, const LarsSettings& settings)
      : SGD(std::move(groups), std::move(defaults)), settings_(settings) {}

  torch::Tensor step(LossClosure closure = nullptr) override {
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : param_groups()[0].params()) {
        if (!p.grad().defined()) continue;
        torch::Tensor& g = p.mutable_grad();
        torch::Tensor trust = LarsTrust(p.norm(), g.norm(), settings_);
        g.add_(p, settings_.weight_decay).mul_(trust);
      }
    }
    return SGD::step(std::move(closure));
  }

  const LarsSettings& settings() const { return settings_; }

 private:
  const LarsSettings settings_;
};

}  // namespace

std::unique_ptr<torch::optim::SGD> MakeOptimizer(
    const ConfigInfo& config, const std::vector<torch::Tensor>& params,
    double base_lr) {
  const bool lars = config.optimizer == "lars";
  const ModelSpec* model = FindModel(config.model);
  const bool split = model == nullptr || !model->decays_every_parameter || lars;
  std::vector<torch::Tensor> weights;
  std::vector<torch::Tensor> others;
  for (const torch::Tensor& p : params) {
    (split && p.dim() <= 1 ? others : weights).push_back(p);
  }
  auto options = [&](double weight_decay) {
    return std::make_unique<torch::optim::SGDOptions>(
        torch::optim::SGDOptions(base_lr)
            .momentum(config.momentum)
            .weight_decay(weight_decay));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(weights, options(lars ? 0.0 : config.weight_decay));
  if (!others.empty()) groups.emplace_back(others, options(0.0));
  torch::optim::SGDOptions defaults =
      torch::optim::SGDOptions(base_lr).momentum(config.momentum);
  if (lars) {
    return std::make_unique<Lars>(
        std::move(groups), defaults,
        LarsSettings{kLarsTrustCoefficient, config.weight_decay});
  }
  return std::make_unique<torch::optim::SGD>(std::move(groups), defaults);
}

std::optional<LarsSettings> LarsOf(const torch::optim::SGD& optimizer) {
  const auto* lars = dynamic_cast<const Lars*>(&optimizer);
  if (lars == nullptr) return std::nullopt;
  return lars->settings();
}

torch::Tensor LarsTrust(const torch::Tensor& w_norm,
                        const torch::Tensor& g_norm, const LarsSettings& lars) {
  return torch::where(w_norm.gt(0).logical_and(g_norm.gt(0)),
                      lars.eta * w_norm / (g_norm + lars.weight_decay * w_norm),
                      torch::ones_like(w_norm));
}

void SetLearningRate(torch::optim::SGD& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
  }
}

LearningRateSchedule::LearningRateSchedule(const ConfigInfo& config,
                                           int64_t global_batch,
                                           int64_t steps_per_epoch)
    : base_lr_(config.lr * static_cast<double>(global_batch) / 256.0),
      total_steps_(steps_per_epoch * config.epochs),
      warmup_steps_(steps_per_epoch * config.warmup_epochs) {}

double LearningRateSchedule::At(int64_t step) const {
  if (step < warmup_steps_) {
    return base_lr_ * static_cast<double>(step + 1) / warmup_steps_;
  }
  const double progress = static_cast<double>(step - warmup_steps_) /
                          std::max<int64_t>(1, total_steps_ - warmup_steps_);
  return base_lr_ * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace hpcai500::worker
