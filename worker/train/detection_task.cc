#include "worker/train/detection_task.h"

#include <vector>

#include "worker/data/device_input.h"
#include "worker/data/ewa_layout.h"
#include "worker/models/build_model.h"
#include "worker/train/precision.h"

namespace hpcai500::worker {

DetectionTask::DetectionTask(const WorkerOptions& options,
                             const std::array<int64_t, 3>& shape,
                             int64_t num_classes, const torch::Device& device)
    : o_(options),
      device_(device),
      num_classes_(num_classes),
      detector_(BuildDetector(options.config.model, shape, num_classes,
                              options.config.rois_per_image,
                              options.config.box_head_width,
                              *options.args.seed)) {
  detector_->to(device_);
}

torch::Tensor DetectionTask::Loss(const Batch& batch, FlopCount* forward) {
  FlopCounter counter;
  torch::Tensor loss =
      FasterRCNNImpl::TotalLoss(detector_->Losses(batch.images, batch.targets));
  *forward = counter.Stop();
  return loss;
}

void DetectionTask::StartEvaluation() {
  local_ = std::make_unique<DetectionEvaluator>(num_classes_);
}

// Image ids are unique across ranks: local index x world + rank.
void DetectionTask::EvaluateBatch(const Batch& batch) {
  std::vector<Detections> found;
  {
    AutocastScope autocast(*o_.args.precision, device_);
    found =
        detector_->Detect(ImagesOn(batch, device_, /*channels_last=*/false));
  }
  for (size_t i = 0; i < found.size(); ++i) {
    local_->AddImage(local_->images() * o_.world_size + o_.rank, found[i].boxes,
                     found[i].scores, found[i].labels, batch.targets[i].boxes,
                     batch.targets[i].labels);
  }
}

// AP is not a sum over shards, so every rank's detections and ground truth
// are gathered (as DetectionEvaluator rows) and each rank scores the whole
// list.
EvalResult DetectionTask::FinishEvaluation(Collectives& collectives,
                                           StallWatchdog& watchdog) {
  watchdog.SetPhase("evaluation (detection gather)");
  const torch::Tensor all =
      GatherRows(collectives, local_->Rows(), DetectionEvaluator::kRowWidth);
  DetectionEvaluator everyone(num_classes_);
  everyone.AddRows(all.data_ptr<double>(), all.numel());
  const MapResult map = everyone.Compute();
  EvalResult result;
  result.quality = map.map;
  for (size_t k = 0; k < map.ap.size(); ++k) {
    result.class_ap.emplace_back(kEwaClassNames[k], map.ap[k]);
  }
  return result;
}

}  // namespace hpcai500::worker
