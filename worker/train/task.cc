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

}  // namespace hpcai500::worker
