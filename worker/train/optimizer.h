// The optimizers of a run and its learning-rate schedule: SGD with momentum
// or LARS (as MLPerf's ResNet reference uses it), and a linear warm-up
// followed by a cosine to zero, stepped every batch.
//
// Thread-compatible: an optimizer is stepped by one thread; the schedule is
// immutable.
#ifndef HPCAI500_WORKER_TRAIN_OPTIMIZER_H_
#define HPCAI500_WORKER_TRAIN_OPTIMIZER_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "methodology/registry.h"

namespace hpcai500::worker {

// SGD with momentum (config.optimizer "sgd") or LARS ("lars") over
// `params` at `base_lr`. The ResNet family decays only conv and linear
// weights (dim > 1), as the reference recipe does; a model of the zoo that
// decays every parameter (resnet_small) does so, unless it trains with LARS,
// whose second group (biases, BatchNorm) never decays.
std::unique_ptr<torch::optim::SGD> MakeOptimizer(
    const ConfigInfo& config, const std::vector<torch::Tensor>& params,
    double base_lr);

// What LARS adds to SGD (see MakeOptimizer): the trust coefficient and the
// weight decay it folds into the first group's gradients.
struct LarsSettings {
  double eta = 0;
  double weight_decay = 0;
};

// The LARS settings of an optimizer MakeOptimizer made for "lars"; nullopt
// for plain SGD.
std::optional<LarsSettings> LarsOf(const torch::optim::SGD& optimizer);

// LARS's trust ratio from a weight norm and a gradient norm (tensors of the
// same shape, elementwise): eta * |w| / (|g| + wd * |w|), 1 where either
// norm is 0. The plain and the sync-free steps (sync_free_step.h) share it.
torch::Tensor LarsTrust(const torch::Tensor& w_norm,
                        const torch::Tensor& g_norm, const LarsSettings& lars);

// Sets the learning rate of every parameter group of `optimizer`.
void SetLearningRate(torch::optim::SGD& optimizer, double lr);

// The learning rate of every step of a run: base_lr scales linearly with the
// global batch (the config's lr is per 256 images), warms up linearly over
// the warm-up epochs, then follows a cosine to zero at the end of the budget.
// Being a function of the step, it needs no state in a checkpoint.
class LearningRateSchedule {
 public:
  LearningRateSchedule(const ConfigInfo& config, int64_t global_batch,
                       int64_t steps_per_epoch);
  double base_lr() const { return base_lr_; }
  // The rate of global step `step` (0-based, counted over all epochs).
  double At(int64_t step) const;

 private:
  // Constant after construction.
  double base_lr_;
  int64_t total_steps_;
  int64_t warmup_steps_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_OPTIMIZER_H_
