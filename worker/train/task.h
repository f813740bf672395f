// A Task is what a workload trains: it owns the model, its training loss and
// its evaluation, so the trainer's loop (worker/train/trainer.h) is the same
// for every workload. ClassificationTask (worker/train/classification_task.h)
// trains a classifier with cross entropy and scores top-1 / top-5;
// DetectionTask (worker/train/detection_task.h) trains Faster R-CNN and
// scores mAP@0.5. MakeTask picks one by the model's family in the zoo.
//
// Thread-compatible: the trainer's thread only.
#ifndef HPCAI500_WORKER_TRAIN_TASK_H_
#define HPCAI500_WORKER_TRAIN_TASK_H_

#include <torch/torch.h>

#include <memory>
#include <string_view>

#include "worker/data/dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/events/reporter.h"
#include "worker/flags.h"
#include "worker/metrics/flops.h"

namespace hpcai500::worker {

class Task {
 public:
  virtual ~Task() = default;

  // The module that trains, on the run's device.
  virtual torch::nn::Module& module() = 0;
  // Whether the model and its inputs run channels-last (NHWC).
  virtual bool channels_last() const = 0;

  // The training loss of `batch` (already on the device, under the caller's
  // autocast). `*forward` receives the FLOPs of the model's forward pass
  // (the detector's losses are part of its forward pass; the classifier's
  // cross entropy is not counted).
  virtual torch::Tensor Loss(const Batch& batch, FlopCount* forward) = 0;

  // An evaluation pass, called with the module in eval mode under a
  // NoGradGuard: StartEvaluation, then EvaluateBatch for each batch of this
  // rank's shard (as the Dataset gives it: ImagesOn,
  // worker/data/device_input.h, makes its images the model's input), then
  // FinishEvaluation, a collective every rank calls, which combines all
  // ranks' scores (setting `watchdog`'s phase for its collectives).
  virtual void StartEvaluation() = 0;
  virtual void EvaluateBatch(const Batch& batch) = 0;
  virtual EvalResult FinishEvaluation(Collectives& collectives,
                                      StallWatchdog& watchdog) = 0;
};

// A Task that only trains: its evaluation scores nothing. For benches and
// tests of the training step, which bring their own model and loss.
class TrainingOnlyTask : public Task {
 public:
  void StartEvaluation() override {}
  void EvaluateBatch(const Batch&) override {}
  EvalResult FinishEvaluation(Collectives&, StallWatchdog&) override {
    return {};
  }
};

// The task of `options.config`'s model (a classifier or a detector of the
// zoo), its model built for `data`'s samples and moved to `device`. Seeds
// come from LibTorch's generator: seed it first. `options` is borrowed for
// the task's lifetime. Throws std::invalid_argument for a model the zoo
// does not build.
std::unique_ptr<Task> MakeTask(const WorkerOptions& options,
                               const Dataset& data,
                               const torch::Device& device);

// The label of a masked row of a Batch (Batch::masked).
inline constexpr int64_t kIgnoredLabel = -100;

// The classification loss: cross entropy of `logits` [B, classes] against
// `labels` [B] with `label_smoothing`, the mean over the batch. A masked
// batch's rows labelled kIgnoredLabel add nothing, and the others' sum is
// divided by B all the same (not by their count, which would need a host
// sync to know and would weigh a short batch's samples up): each sample
// weighs what it does in a batch of B.
torch::Tensor CrossEntropyLoss(const torch::Tensor& logits,
                               const torch::Tensor& labels,
                               double label_smoothing, bool masked);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_TASK_H_
