#include "worker/models/build_model.h"

#include <stdexcept>
#include <string>

#include "worker/models/model_zoo.h"
#include "worker/models/resnet.h"
#include "worker/models/resnet_small.h"

namespace hpcai500::worker {

torch::nn::AnyModule BuildClassifier(std::string_view name,
                                     const std::array<int64_t, 3>& shape,
                                     int64_t num_classes, bool fused_bn) {
  const ModelSpec* spec = FindModel(name);
  if (spec != nullptr && spec->family == ModelFamily::kResNetSmall) {
    if (fused_bn) {
      throw std::invalid_argument("--fused-bn: model " + std::string(name) +
                                  " has no fused batch-norm path");
    }
    return torch::nn::AnyModule(ResNetSmall(num_classes));
  }
  ResNetOptions r;
  r.depth = DepthOfModel(name, ModelFamily::kResNet);
  r.num_classes = num_classes;
  r.in_channels = shape[0];
  r.small_input_stem = shape[1] <= 64;
  r.fused_bn = fused_bn;
  return torch::nn::AnyModule(ResNet(r));
}

FasterRCNN BuildDetector(std::string_view name,
                         const std::array<int64_t, 3>& shape,
                         int64_t num_classes, int64_t rois_per_image,
                         int64_t box_head_width, uint64_t seed) {
  FasterRCNNOptions f =
      DetectorOptionsFor(name, /*in_channels=*/shape[0], /*rows=*/shape[1],
                         rois_per_image, box_head_width);
  f.num_classes = num_classes;
  f.seed = seed;
  return FasterRCNN(f);
}

}  // namespace hpcai500::worker
