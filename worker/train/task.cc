#include "worker/train/task.h"

#include <stdexcept>
#include <string>

#include "worker/models/model_zoo.h"
#include "worker/train/classification_task.h"
#include "worker/train/detection_task.h"

namespace hpcai500::worker {

std::unique_ptr<Task> MakeTask(const WorkerOptions& options,
                               const Dataset& data,
                               const torch::Device& device) {
  const std::string& model = options.config.model;
  if (IsDetector(model)) {
    return std::make_unique<DetectionTask>(options, data.sample_shape(),
                                           data.num_classes(), device);
  }
  if (IsClassifier(model)) {
    return std::make_unique<ClassificationTask>(options, data.sample_shape(),
                                                data.num_classes(), device);
  }
  throw std::invalid_argument("model '" + model +
                              "' is not built by this worker");
}

torch::Tensor CrossEntropyLoss(const torch::Tensor& logits,
                               const torch::Tensor& labels,
                               double label_smoothing, bool masked) {
  namespace F = torch::nn::functional;
  auto options = F::CrossEntropyFuncOptions().label_smoothing(label_smoothing);
  if (!masked) return F::cross_entropy(logits, labels, options);
  // Masked rows come out as 0 with reduction none.
  return F::cross_entropy(
             logits, labels,
             options.ignore_index(kIgnoredLabel).reduction(torch::kNone))
      .sum()
      .div(static_cast<double>(labels.size(0)));
}

}  // namespace hpcai500::worker
