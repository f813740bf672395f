// DetectionTask: Faster R-CNN of the zoo trained on Extreme Weather with its
// own RPN and box-head losses, scored by mAP@0.5 over every rank's
// detections. The model keeps NCHW: its RoIAlign and box ops index the
// feature map directly. See Task (worker/train/task.h) for the contract.
//
// Thread-compatible: the trainer's thread only.
#ifndef HPCAI500_WORKER_TRAIN_DETECTION_TASK_H_
#define HPCAI500_WORKER_TRAIN_DETECTION_TASK_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "worker/metrics/detection_metrics.h"
#include "worker/models/faster_rcnn.h"
#include "worker/train/task.h"

namespace hpcai500::worker {

class DetectionTask final : public Task {
 public:
  // Builds `options.config.model` (faster_rcnn_resnetN) for samples of
  // `shape` ({C, H, W}) and `num_classes` classes on `device`, its samplers
  // seeded by options.args.seed. Borrows `options` for the task's lifetime.
  DetectionTask(const WorkerOptions& options,
                const std::array<int64_t, 3>& shape, int64_t num_classes,
                const torch::Device& device);

  torch::nn::Module& module() override { return *detector_; }
  bool channels_last() const override { return false; }
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
  FasterRCNN detector_{nullptr};

  // This rank's detections and ground truth of the pass in progress.
  std::unique_ptr<DetectionEvaluator> local_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_DETECTION_TASK_H_
