// The builders of the zoo's models (worker/models/model_zoo.h): a name and
// the data's shape in, a module with freshly initialised parameters out.
//
// Thread-safety: pure apart from LibTorch's global random generator, which
// initialises the parameters.
#ifndef HPCAI500_WORKER_MODELS_BUILD_MODEL_H_
#define HPCAI500_WORKER_MODELS_BUILD_MODEL_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "worker/models/faster_rcnn.h"

namespace hpcai500::worker {

// Classifier `name` for samples of `shape` ({C, H, W}) with `num_classes`
// classes: ResNetSmall, or a ResNet (with the small-input stem for images up
// to 64 pixels high), its batch norms fused with their ReLUs when
// `fused_bn` (ResNetOptions::fused_bn). Throws std::invalid_argument for
// another name, or for `fused_bn` with a model that is not a ResNet.
torch::nn::AnyModule BuildClassifier(std::string_view name,
                                     const std::array<int64_t, 3>& shape,
                                     int64_t num_classes, bool fused_bn);

// Faster R-CNN `name` (faster_rcnn_resnetN) on `shape`'s grid with
// `num_classes` foreground classes and samplers seeded by `seed`, configured
// by DetectorOptionsFor (worker/models/faster_rcnn.h) from `rois_per_image`
// and `box_head_width`. Throws as DetectorOptionsFor does.
FasterRCNN BuildDetector(std::string_view name,
                         const std::array<int64_t, 3>& shape,
                         int64_t num_classes, int64_t rois_per_image,
                         int64_t box_head_width, uint64_t seed);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_BUILD_MODEL_H_
