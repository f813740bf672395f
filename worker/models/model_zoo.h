// The model zoo: every model this worker builds, by the name a registry
// config gives it, with the family whose builder makes it
// (worker/models/build_model.h). This table is the one list of model names
// in the worker; the ResNet and Faster R-CNN name parsers, the builders and
// the runnability check all read it. No LibTorch here, so flag parsing can
// use it too.
//
// Thread-safe: the table is immutable.
#ifndef HPCAI500_WORKER_MODELS_MODEL_ZOO_H_
#define HPCAI500_WORKER_MODELS_MODEL_ZOO_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpcai500::worker {

// Which builder makes a model, and so which task trains it.
enum class ModelFamily {
  kResNetSmall,  // classifier for 28x28 Fashion-MNIST images only
  kResNet,       // classifier, ResNet v1.5 of a given depth
  kFasterRCNN,   // detector with a ResNet backbone of a given depth
};

struct ModelSpec {
  std::string_view name;
  ModelFamily family;
  int depth;  // ResNet depth of the network or its backbone; 0 if none
  // Weight decay on every parameter (resnet_small), instead of only on the
  // conv and linear weights as the ResNet reference recipe decays.
  bool decays_every_parameter;
  // The MLPerf benchmark whose rules the model's logs follow ("resnet"), or
  // "" when none does.
  std::string_view mlperf_benchmark;
};

// Every model the worker builds.
const std::vector<ModelSpec>& ModelZoo();

// The names of the zoo's models, in its order: all of them, or those of
// `family`.
std::vector<std::string_view> ModelNames(
    std::optional<ModelFamily> family = std::nullopt);

// The model named `name`, or nullptr when this worker does not build it.
const ModelSpec* FindModel(std::string_view name);

// The depth of model `name` of `family`. Throws std::invalid_argument naming
// `name` and the family's models ("expected a, b or c") for any other name.
int DepthOfModel(std::string_view name, ModelFamily family);

// Whether `name` is a classifier (ResNetSmall or ResNet) / a detector.
bool IsClassifier(std::string_view name);
bool IsDetector(std::string_view name);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_MODEL_ZOO_H_
