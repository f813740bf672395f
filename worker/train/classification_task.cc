#include "worker/train/classification_task.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "worker/data/device_input.h"
#include "worker/kernels/fused_bn.h"
#include "worker/models/build_model.h"
#include "worker/train/precision.h"

namespace hpcai500::worker {

ClassificationTask::ClassificationTask(const WorkerOptions& options,
                                       const std::array<int64_t, 3>& shape,
                                       int64_t num_classes,
                                       const torch::Device& device)
    : o_(options),
      device_(device),
      num_classes_(num_classes),
      model_(BuildClassifier(options.config.model, shape, num_classes,
                             options.args.fused_bn.value_or(false))) {
  if (options.args.fused_bn.value_or(false)) {
    const std::string why = FusedBnUnavailableReason(device_);
    if (!why.empty()) throw std::invalid_argument("--fused-bn: " + why);
  }
  model_.ptr()->to(device_);
  channels_last_ = WantsChannelsLast(*o_.args.precision, /*asked=*/false);
  if (channels_last_) ToChannelsLast(*model_.ptr());
}

torch::Tensor ClassificationTask::Loss(const Batch& batch, FlopCount* forward) {
  FlopCounter counter;
  torch::Tensor logits = model_.forward(batch.images);
  *forward = counter.Stop();
  return CrossEntropyLoss(logits, batch.labels, o_.config.label_smoothing,
                          batch.masked);
}

void ClassificationTask::StartEvaluation() {
  correct_ = 0;
  correct_top5_ = 0;
  seen_ = 0;
}

void ClassificationTask::EvaluateBatch(const Batch& batch) {
  const int64_t k = std::min<int64_t>(5, num_classes_);
  torch::Tensor x = ImagesOn(batch, device_, channels_last_);
  torch::Tensor y = batch.labels.to(device_);
  torch::Tensor logits;
  {
    AutocastScope autocast(*o_.args.precision, device_);
    logits = model_.forward(x);
  }
  torch::Tensor top = std::get<1>(logits.topk(k, /*dim=*/1));
  torch::Tensor hits = top.eq(y.unsqueeze(1));
  correct_ += hits.select(1, 0).sum().item<int64_t>();
  correct_top5_ += hits.any(1).sum().item<int64_t>();
  seen_ += batch.size();
}

// Correct top-1 and top-5 counts summed across ranks.
EvalResult ClassificationTask::FinishEvaluation(Collectives& collectives,
                                                StallWatchdog& watchdog) {
  torch::Tensor counts = torch::tensor(
      {static_cast<double>(correct_), static_cast<double>(correct_top5_),
       static_cast<double>(seen_)},
      torch::kFloat64);
  watchdog.SetPhase("evaluation (count all-reduce)");
  collectives.AllReduceSum(counts);
  EvalResult result;
  result.top5 = 0.0;
  const double total = counts[2].item<double>();
  if (total <= 0) return result;
  result.quality = counts[0].item<double>() / total;
  result.top5 = counts[1].item<double>() / total;
  return result;
}

}  // namespace hpcai500::worker
