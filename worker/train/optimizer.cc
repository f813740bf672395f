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
       torch::optim::SGDOptions defaults, double eta, double weight_decay)
      : SGD(std::move(groups), std::move(defaults)),
        eta_(eta),
        weight_decay_(weight_decay) {}

  torch::Tensor step(LossClosure closure = nullptr) override {
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : param_groups()[0].params()) {
        if (!p.grad().defined()) continue;
        torch::Tensor& g = p.mutable_grad();
        torch::Tensor w_norm = p.norm();
        torch::Tensor g_norm = g.norm();
        torch::Tensor trust =
            torch::where(w_norm.gt(0).logical_and(g_norm.gt(0)),
                         eta_ * w_norm / (g_norm + weight_decay_ * w_norm),
                         torch::ones_like(w_norm));
        g.add_(p, weight_decay_).mul_(trust);
      }
    }
    return SGD::step(std::move(closure));
  }

 private:
  const double eta_;
  const double weight_decay_;
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
    return std::make_unique<Lars>(std::move(groups), defaults,
                                  kLarsTrustCoefficient, config.weight_decay);
  }
  return std::make_unique<torch::optim::SGD>(std::move(groups), defaults);
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
