// ClassificationTask: a classifier of the zoo (ResNetSmall or a ResNet)
// trained with label-smoothed cross entropy and scored by top-1 and top-5
// accuracy over every rank's shard of the evaluation set. See Task
// (worker/train/task.h) for the contract.
//
// Thread-compatible: the trainer's thread only.
#ifndef HPCAI500_WORKER_TRAIN_CLASSIFICATION_TASK_H_
#define HPCAI500_WORKER_TRAIN_CLASSIFICATION_TASK_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "worker/train/task.h"

namespace hpcai500::worker {

class ClassificationTask final : public Task {
 public:
  // Builds `options.config.model` for samples of `shape` ({C, H, W}) and
  // `num_classes` classes on `device`; channels-last when the precision
  // wants it. Borrows `options` for the task's lifetime.
  ClassificationTask(const WorkerOptions& options,
                     const std::array<int64_t, 3>& shape, int64_t num_classes,
                     const torch::Device& device);

  torch::nn::Module& module() override { return *model_.ptr(); }
  bool channels_last() const override { return channels_last_; }
  torch::Tensor Loss(const Batch& batch, FlopCount* forward) override;
  void StartEvaluation() override;
  void EvaluateBatch(const Batch& batch) override;
  EvalResult FinishEvaluation(Collectives& collectives,
                              StallWatchdog& watchdog) override;

 private:
  // Constant after construction.
  const WorkerOptions& o_;
  const torch::Device device_;
  const int64_t num_classes_;
  torch::nn::AnyModule model_;
  bool channels_last_ = false;

  // The evaluation pass in progress: this rank's counts.
  int64_t correct_ = 0;
  int64_t correct_top5_ = 0;
  int64_t seen_ = 0;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_CLASSIFICATION_TASK_H_
