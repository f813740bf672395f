// Faster R-CNN (Ren et al. 2015) for the Extreme Weather workload: a ResNet
// backbone taking the 16 CAM5 channels, one feature level (C3, C4 or C5 at
// stride 8, 16 or 32; DetectorOptionsFor picks C3 or C4 by grid height), a
// region proposal network with anchors sized and shaped for cyclones and
// atmospheric rivers, RoIAlign 7x7, and a two-FC box head with
// classification and class-specific regression. Images are used at their
// own size, never resized.
//
// Boxes: float [K, 4] rows (x1, y1, x2, y2) in input pixels (see
// worker/detection_ops.h); class labels int64 [K] in 0..num_classes-1
// (background is internal). Training: Losses(); evaluation: Detect().
//
// Thread-safety: one thread uses a module at a time (LibTorch's rule); the
// samplers inside advance with every training call.
#ifndef HPCAI500_WORKER_MODELS_FASTER_RCNN_H_
#define HPCAI500_WORKER_MODELS_FASTER_RCNN_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "worker/models/detection_ops.h"
#include "worker/models/resnet.h"

namespace hpcai500::worker {

struct FasterRCNNOptions {
  int backbone_depth = 18;  // 18, 34, 50 or 101
  int64_t in_channels = 16;
  int64_t num_classes = 4;  // foreground classes
  int feature_stage = 4;    // 3: C3 (stride 8); 4: C4 (16); 5: C5 (32)

  // Anchors: area size^2 (input pixels), height / width = ratio. The
  // defaults suit the reduced 96 x 144 grid; scale sizes with the grid.
  std::vector<double> anchor_sizes = {16, 32, 64, 128};
  std::vector<double> anchor_aspect_ratios = {0.25, 0.5, 1.0, 2.0, 4.0};

  // Region proposal network.
  int64_t rpn_pre_nms_top_n_train = 1000;
  int64_t rpn_post_nms_top_n_train = 500;
  int64_t rpn_pre_nms_top_n_test = 500;
  int64_t rpn_post_nms_top_n_test = 300;
  double rpn_nms_threshold = 0.7;
  double rpn_fg_iou = 0.7;
  double rpn_bg_iou = 0.3;
  int64_t rpn_batch_size_per_image = 256;
  double rpn_positive_fraction = 0.5;

  // RoI box head.
  int64_t roi_output_size = 7;
  int64_t roi_sampling_ratio = 2;
  int64_t representation_size = 1024;  // width of the two FC layers
  // On CPU, compute fc6 and fc7 as convolutions over the pooled RoI maps
  // (fc6's weight viewed as a roi_output_size^2 kernel, fc7's as 1x1): the
  // same parameters and the same result up to rounding, but oneDNN instead
  // of the BLAS matrix multiply. Several times faster where LibTorch's BLAS
  // is the reference (netlib) one; with OpenBLAS (which install-deps.sh
  // installs) the matrix multiply is faster (bench/RESULTS.md), hence off
  // by default. Ignored on other devices.
  bool conv_box_head = false;
  double box_fg_iou = 0.5;
  double box_bg_iou = 0.5;
  int64_t box_batch_size_per_image = 512;
  double box_positive_fraction = 0.25;
  double box_score_threshold = 0.05;
  double box_nms_threshold = 0.5;
  int64_t detections_per_image = 100;

  uint64_t seed = 0;  // seeds the anchor and proposal samplers
};

// Grids with fewer rows than this get C3 features, others C4: a cyclone
// spans a few C4 cells (stride 16) of the full 768-row grid but less than
// one on a reduced grid.
inline constexpr int64_t kDetectorMinRowsForC4 = 192;
// The grid height the default anchor_sizes suit; DetectorOptionsFor scales
// them by rows / kDetectorAnchorRows (x8 on the full grid).
inline constexpr int64_t kDetectorAnchorRows = 96;

// The options of the detector the worker trains for `model`
// (faster_rcnn_resnet18, 34, 50 or 101) on images of `in_channels` x `rows`
// x any width: C3 features below kDetectorMinRowsForC4 rows, else C4;
// anchor sizes scaled by rows / kDetectorAnchorRows; `rois_per_image` RoIs
// sampled per image for the box head, which caps the proposals kept at 4x
// that in training and 2x in evaluation; fc6/fc7 `box_head_width` wide.
// 0 for either keeps Faster R-CNN's default (512 RoIs, width 1024), as the
// registry keys of the same names. num_classes and seed keep their defaults.
// Throws std::invalid_argument for another model, `in_channels` or `rows`
// below 1, or a negative count.
FasterRCNNOptions DetectorOptionsFor(std::string_view model,
                                     int64_t in_channels, int64_t rows,
                                     int64_t rois_per_image,
                                     int64_t box_head_width);

// Ground truth of one image.
struct DetectionTarget {
  torch::Tensor boxes;   // float [K, 4], x1 y1 x2 y2 pixels; K may be 0
  torch::Tensor labels;  // int64 [K] in 0..num_classes-1
};

// Detections of one image, by decreasing score.
struct Detections {
  torch::Tensor boxes;   // float [D, 4] inside the image
  torch::Tensor scores;  // float [D] in [score_threshold, 1]
  torch::Tensor labels;  // int64 [D] in 0..num_classes-1
};

class FasterRCNNImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument for a bad option (naming it).
  explicit FasterRCNNImpl(const FasterRCNNOptions& options);

  // Training losses for images [B, in_channels, H, W] and one target per
  // image: "loss_objectness", "loss_rpn_box_reg", "loss_classifier",
  // "loss_box_reg" (scalars; their sum is the training loss). Works in train
  // or eval mode (BatchNorm follows the module's mode). Throws
  // std::invalid_argument on a shape mismatch or a label out of range.
  std::map<std::string, torch::Tensor> Losses(
      const torch::Tensor& images, const std::vector<DetectionTarget>& targets);

  // Detections per image after score threshold and per-class NMS. Callers
  // evaluating should put the module in eval mode and hold a NoGradGuard.
  std::vector<Detections> Detect(const torch::Tensor& images);

  // Sum of the Losses() dict.
  static torch::Tensor TotalLoss(
      const std::map<std::string, torch::Tensor>& losses);

  const FasterRCNNOptions& options() const { return options_; }
  ResNet& backbone() { return backbone_; }

 private:
  struct RpnOutput {
    torch::Tensor objectness;  // [B, N] logits
    torch::Tensor deltas;      // [B, N, 4]
    torch::Tensor anchors;     // [N, 4]
  };

  torch::Tensor FeatureMap(const torch::Tensor& images);
  RpnOutput Rpn(const torch::Tensor& features, int64_t image_height,
                int64_t image_width);
  // Proposals per image (detached), [P_i, 4].
  std::vector<torch::Tensor> Proposals(const RpnOutput& rpn,
                                       int64_t image_height,
                                       int64_t image_width, bool training);
  // Box-head logits [K, num_classes + 1] and deltas [K, 4 (num_classes + 1)]
  // for proposals (one tensor per image).
  std::pair<torch::Tensor, torch::Tensor> BoxHead(
      const torch::Tensor& features, const std::vector<torch::Tensor>& boxes);
  void CheckInputs(const torch::Tensor& images,
                   const std::vector<DetectionTarget>* targets) const;

  // Constant after construction.
  FasterRCNNOptions options_;
  double stride_ = 16;
  int64_t num_anchors_ = 0;  // per location

  ResNet backbone_{nullptr};
  torch::nn::Conv2d rpn_conv_{nullptr}, rpn_objectness_{nullptr},
      rpn_deltas_{nullptr};
  torch::nn::Linear fc6_{nullptr}, fc7_{nullptr}, cls_score_{nullptr},
      bbox_pred_{nullptr};
  // Advanced by every Losses() call.
  std::unique_ptr<detection::BalancedSampler> rpn_sampler_;
  std::unique_ptr<detection::BalancedSampler> box_sampler_;
};
TORCH_MODULE(FasterRCNN);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_FASTER_RCNN_H_
