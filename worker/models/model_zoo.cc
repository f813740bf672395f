#include "worker/models/model_zoo.h"

#include <stdexcept>
#include <string>

#include "common/vocabulary.h"

namespace hpcai500::worker {

const std::vector<ModelSpec>& ModelZoo() {
  static const std::vector<ModelSpec> kZoo = {
      {"resnet_small", ModelFamily::kResNetSmall, 0, true, "resnet"},
      {"resnet18", ModelFamily::kResNet, 18, false, "resnet"},
      {"resnet34", ModelFamily::kResNet, 34, false, "resnet"},
      {"resnet50", ModelFamily::kResNet, 50, false, "resnet"},
      {"resnet101", ModelFamily::kResNet, 101, false, "resnet"},
      {"faster_rcnn_resnet18", ModelFamily::kFasterRCNN, 18, false, ""},
      {"faster_rcnn_resnet34", ModelFamily::kFasterRCNN, 34, false, ""},
      {"faster_rcnn_resnet50", ModelFamily::kFasterRCNN, 50, false, ""},
      {"faster_rcnn_resnet101", ModelFamily::kFasterRCNN, 101, false, ""},
  };
  return kZoo;
}

std::vector<std::string_view> ModelNames(std::optional<ModelFamily> family) {
  std::vector<std::string_view> names;
  for (const ModelSpec& spec : ModelZoo()) {
    if (!family || spec.family == *family) names.push_back(spec.name);
  }
  return names;
}

const ModelSpec* FindModel(std::string_view name) {
  for (const ModelSpec& spec : ModelZoo()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

int DepthOfModel(std::string_view name, ModelFamily family) {
  const ModelSpec* spec = FindModel(name);
  if (spec == nullptr || spec->family != family) {
    throw std::invalid_argument(std::string(family == ModelFamily::kFasterRCNN
                                                ? "unknown detector "
                                                  "model '"
                                                : "unknown model '") +
                                std::string(name) + "' (expected " +
                                JoinInProse(ModelNames(family)) + ")");
  }
  return spec->depth;
}

bool IsClassifier(std::string_view name) {
  const ModelSpec* spec = FindModel(name);
  return spec != nullptr && spec->family != ModelFamily::kFasterRCNN;
}

bool IsDetector(std::string_view name) {
  const ModelSpec* spec = FindModel(name);
  return spec != nullptr && spec->family == ModelFamily::kFasterRCNN;
}

}  // namespace hpcai500::worker
