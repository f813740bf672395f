#include "worker/models/faster_rcnn.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "worker/models/model_zoo.h"

namespace hpcai500::worker {
namespace {

namespace det = ::hpcai500::worker::detection;

// Smooth-L1 transition point of the Faster R-CNN losses.
constexpr double kSmoothL1Beta = 1.0 / 9.0;
// Boxes narrower than this (pixels) are dropped from proposals/detections.
constexpr double kMinProposalSize = 1e-3;
constexpr double kMinDetectionSize = 1e-2;

void Require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("FasterRCNN: " + message);
}

void ValidateOptions(const FasterRCNNOptions& o) {
  Require(o.in_channels >= 1, "in_channels must be >= 1");
  Require(o.num_classes >= 1, "num_classes must be >= 1");
  Require(o.feature_stage >= 3 && o.feature_stage <= 5,
          "feature_stage must be 3, 4 or 5, got " +
              std::to_string(o.feature_stage));
  Require(!o.anchor_sizes.empty() && !o.anchor_aspect_ratios.empty(),
          "anchor_sizes and anchor_aspect_ratios must not be empty");
  for (double v : o.anchor_sizes) Require(v > 0, "anchor sizes must be > 0");
  for (double v : o.anchor_aspect_ratios) {
    Require(v > 0, "anchor aspect ratios must be > 0");
  }
  Require(o.rpn_pre_nms_top_n_train >= 1 && o.rpn_post_nms_top_n_train >= 1 &&
              o.rpn_pre_nms_top_n_test >= 1 && o.rpn_post_nms_top_n_test >= 1,
          "RPN top-n values must be >= 1");
  Require(o.rpn_bg_iou <= o.rpn_fg_iou, "rpn_bg_iou must be <= rpn_fg_iou");
  Require(o.box_bg_iou <= o.box_fg_iou, "box_bg_iou must be <= box_fg_iou");
  Require(o.roi_output_size >= 1 && o.roi_sampling_ratio >= 1,
          "roi_output_size and roi_sampling_ratio must be >= 1");
  Require(o.representation_size >= 1, "representation_size must be >= 1");
  Require(o.detections_per_image >= 1, "detections_per_image must be >= 1");
}

template <typename Holder>
Holder Child(torch::nn::Module& parent, const std::string& name) {
  auto impl = std::dynamic_pointer_cast<typename Holder::ContainedType>(
      parent.named_children()[name]);
  if (!impl) throw std::logic_error("ResNet has no child " + name);
  return Holder(impl);
}

// Binary sampler labels from matches: 1 matched, 0 background, -1 ignored.
torch::Tensor SamplerLabels(const torch::Tensor& matches) {
  torch::Tensor labels = torch::full_like(matches, -1);
  labels.masked_fill_(matches >= 0, 1);
  labels.masked_fill_(matches == det::kBelowLow, 0);
  return labels;
}

}  // namespace

FasterRCNNOptions DetectorOptionsFor(std::string_view model,
                                     int64_t in_channels, int64_t rows,
                                     int64_t rois_per_image,
                                     int64_t box_head_width) {
  Require(in_channels >= 1 && rows >= 1,
          "in_channels and rows must be >= 1, got " +
              std::to_string(in_channels) + " and " + std::to_string(rows));
  Require(rois_per_image >= 0 && box_head_width >= 0,
          "rois_per_image and box_head_width must not be negative");
  FasterRCNNOptions o;
  o.backbone_depth = DepthOfModel(model, ModelFamily::kFasterRCNN);
  o.in_channels = in_channels;
  o.feature_stage = rows < kDetectorMinRowsForC4 ? 3 : 4;
  const double scale =
      static_cast<double>(rows) / static_cast<double>(kDetectorAnchorRows);
  for (double& size : o.anchor_sizes) size *= scale;
  if (rois_per_image > 0) {
    // Fewer sampled RoIs need fewer proposals.
    o.box_batch_size_per_image = rois_per_image;
    o.rpn_post_nms_top_n_train =
        std::min(o.rpn_post_nms_top_n_train, 4 * rois_per_image);
    o.rpn_post_nms_top_n_test =
        std::min(o.rpn_post_nms_top_n_test, 2 * rois_per_image);
  }
  if (box_head_width > 0) o.representation_size = box_head_width;
  return o;
}

FasterRCNNImpl::FasterRCNNImpl(const FasterRCNNOptions& options)
    : options_(options) {
  ValidateOptions(options_);
  ResNetOptions backbone_options;
  backbone_options.depth = options_.backbone_depth;
  backbone_options.num_classes = 0;
  backbone_options.in_channels = options_.in_channels;
  backbone_ = register_module("backbone", ResNet(backbone_options));
  // Stages past the feature level would hold parameters that never receive
  // gradients (which the gradient reducer must not wait for): drop them.
  for (int stage = options_.feature_stage; stage < 5; ++stage) {
    backbone_->unregister_module("layer" + std::to_string(stage));
  }
  stride_ = static_cast<double>(int64_t{1} << options_.feature_stage);
  const int64_t channels =
      backbone_->feature_channels()[options_.feature_stage - 2];
  num_anchors_ = static_cast<int64_t>(options_.anchor_sizes.size() *
                                      options_.anchor_aspect_ratios.size());

  using torch::nn::Conv2dOptions;
  rpn_conv_ = register_module(
      "rpn_conv",
      torch::nn::Conv2d(Conv2dOptions(channels, channels, 3).padding(1)));
  rpn_objectness_ = register_module(
      "rpn_objectness",
      torch::nn::Conv2d(Conv2dOptions(channels, num_anchors_, 1)));
  rpn_deltas_ = register_module(
      "rpn_deltas",
      torch::nn::Conv2d(Conv2dOptions(channels, 4 * num_anchors_, 1)));
  const int64_t pooled =
      channels * options_.roi_output_size * options_.roi_output_size;
  fc6_ = register_module(
      "fc6", torch::nn::Linear(pooled, options_.representation_size));
  fc7_ =
      register_module("fc7", torch::nn::Linear(options_.representation_size,
                                               options_.representation_size));
  cls_score_ = register_module("cls_score",
                               torch::nn::Linear(options_.representation_size,
                                                 options_.num_classes + 1));
  bbox_pred_ = register_module(
      "bbox_pred", torch::nn::Linear(options_.representation_size,
                                     4 * (options_.num_classes + 1)));

  torch::NoGradGuard no_grad;
  for (auto* conv : {&rpn_conv_, &rpn_objectness_, &rpn_deltas_}) {
    torch::nn::init::normal_((*conv)->weight, 0.0, 0.01);
    torch::nn::init::zeros_((*conv)->bias);
  }
  torch::nn::init::normal_(cls_score_->weight, 0.0, 0.01);
  torch::nn::init::zeros_(cls_score_->bias);
  torch::nn::init::normal_(bbox_pred_->weight, 0.0, 0.001);
  torch::nn::init::zeros_(bbox_pred_->bias);

  rpn_sampler_ = std::make_unique<det::BalancedSampler>(
      options_.rpn_batch_size_per_image, options_.rpn_positive_fraction,
      options_.seed);
  box_sampler_ = std::make_unique<det::BalancedSampler>(
      options_.box_batch_size_per_image, options_.box_positive_fraction,
      options_.seed + 1);
}

torch::Tensor FasterRCNNImpl::FeatureMap(const torch::Tensor& images) {
  torch::nn::Module& net = *backbone_;
  torch::Tensor x = torch::relu(Child<torch::nn::BatchNorm2d>(
      net, "bn1")(Child<torch::nn::Conv2d>(net, "conv1")(images)));
  x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  for (int stage = 2; stage <= options_.feature_stage; ++stage) {
    x = Child<torch::nn::Sequential>(net, "layer" + std::to_string(stage - 1))
            ->forward(x);
  }
  return x;
}

FasterRCNNImpl::RpnOutput FasterRCNNImpl::Rpn(const torch::Tensor& features,
                                              int64_t /*image_height*/,
                                              int64_t /*image_width*/) {
  const int64_t batch = features.size(0);
  const int64_t h = features.size(2);
  const int64_t w = features.size(3);
  torch::Tensor t = torch::relu(rpn_conv_(features));
  RpnOutput out;
  out.objectness =
      rpn_objectness_(t).permute({0, 2, 3, 1}).reshape({batch, -1});
  out.deltas = rpn_deltas_(t)
                   .view({batch, num_anchors_, 4, h, w})
                   .permute({0, 3, 4, 1, 2})
                   .reshape({batch, -1, 4});
  out.anchors =
      det::GenerateAnchors(options_.anchor_sizes, options_.anchor_aspect_ratios,
                           h, w, stride_, features.device());
  return out;
}

std::vector<torch::Tensor> FasterRCNNImpl::Proposals(const RpnOutput& rpn,
                                                     int64_t image_height,
                                                     int64_t image_width,
                                                     bool training) {
  const int64_t pre = training ? options_.rpn_pre_nms_top_n_train
                               : options_.rpn_pre_nms_top_n_test;
  const int64_t post = training ? options_.rpn_post_nms_top_n_train
                                : options_.rpn_post_nms_top_n_test;
  torch::Tensor objectness = rpn.objectness.detach().to(torch::kFloat);
  torch::Tensor deltas = rpn.deltas.detach().to(torch::kFloat);
  std::vector<torch::Tensor> proposals;
  for (int64_t b = 0; b < objectness.size(0); ++b) {
    const int64_t k = std::min(pre, objectness.size(1));
    auto [scores, idx] = objectness[b].topk(k);
    torch::Tensor boxes =
        det::DecodeBoxes(deltas[b].index_select(0, idx),
                         rpn.anchors.index_select(0, idx), det::kRpnBoxWeights);
    boxes = det::ClipBoxes(boxes, image_height, image_width);
    torch::Tensor keep = det::NonSmallBoxes(boxes, kMinProposalSize);
    boxes = boxes.index_select(0, keep);
    scores = scores.index_select(0, keep);
    keep = det::Nms(boxes, scores, options_.rpn_nms_threshold);
    keep = keep.narrow(0, 0, std::min(post, keep.size(0)));
    proposals.push_back(boxes.index_select(0, keep));
  }
  return proposals;
}

std::pair<torch::Tensor, torch::Tensor> FasterRCNNImpl::BoxHead(
    const torch::Tensor& features, const std::vector<torch::Tensor>& boxes) {
  std::vector<torch::Tensor> rois;
  for (size_t b = 0; b < boxes.size(); ++b) {
    torch::Tensor index = torch::full(
        {boxes[b].size(0), 1}, static_cast<double>(b), boxes[b].options());
    rois.push_back(torch::cat({index, boxes[b]}, /*dim=*/1));
  }
  det::RoiAlignOptions align;
  align.output_height = options_.roi_output_size;
  align.output_width = options_.roi_output_size;
  align.spatial_scale = 1.0 / stride_;
  align.sampling_ratio = options_.roi_sampling_ratio;
  align.aligned = true;
  torch::Tensor pooled = det::RoiAlign(features, torch::cat(rois), align);
  torch::Tensor x;
  if (options_.conv_box_head && pooled.device().is_cpu()) {
    // fc6(flatten(p)) == conv2d(p, fc6.weight viewed [out, C, s, s]): the
    // flattened index c * s * s + i * s + j is the kernel's (c, i, j).
    const int64_t s = options_.roi_output_size;
    const int64_t r = options_.representation_size;
    x = torch::relu(torch::conv2d(
        pooled, fc6_->weight.reshape({r, pooled.size(1), s, s}), fc6_->bias));
    x = torch::relu(
            torch::conv2d(x, fc7_->weight.reshape({r, r, 1, 1}), fc7_->bias))
            .flatten(/*start_dim=*/1);
  } else {
    x = torch::relu(fc7_(torch::relu(fc6_(pooled.flatten(/*start_dim=*/1)))));
  }
  return {cls_score_(x), bbox_pred_(x)};
}

void FasterRCNNImpl::CheckInputs(
    const torch::Tensor& images,
    const std::vector<DetectionTarget>* targets) const {
  Require(images.dim() == 4 && images.size(1) == options_.in_channels,
          "images must be [B, " + std::to_string(options_.in_channels) +
              ", H, W], got " + c10::str(images.sizes()));
  if (targets == nullptr) return;
  Require(static_cast<int64_t>(targets->size()) == images.size(0),
          "got " + std::to_string(targets->size()) + " targets for " +
              std::to_string(images.size(0)) + " images");
  for (size_t i = 0; i < targets->size(); ++i) {
    const DetectionTarget& t = (*targets)[i];
    const std::string where = "target " + std::to_string(i) + ": ";
    Require(t.boxes.defined() && t.boxes.dim() == 2 && t.boxes.size(1) == 4,
            where + "boxes must be [K, 4]");
    Require(t.labels.defined() && t.labels.dim() == 1 &&
                t.labels.size(0) == t.boxes.size(0),
            where + "labels must be [K] with K = " +
                std::to_string(t.boxes.size(0)));
    if (t.boxes.size(0) == 0) continue;
    Require(t.labels.min().item<int64_t>() >= 0 &&
                t.labels.max().item<int64_t>() < options_.num_classes,
            where + "labels must lie in [0, " +
                std::to_string(options_.num_classes) + ")");
    torch::Tensor b = t.boxes;
    Require(
        ((b.select(1, 2) > b.select(1, 0)) & (b.select(1, 3) > b.select(1, 1)))
            .all()
            .item<bool>(),
        where + "boxes must have x2 > x1 and y2 > y1");
  }
}

std::map<std::string, torch::Tensor> FasterRCNNImpl::Losses(
    const torch::Tensor& images, const std::vector<DetectionTarget>& targets) {
  CheckInputs(images, &targets);
  const int64_t height = images.size(2);
  const int64_t width = images.size(3);
  const torch::Device device = images.device();
  torch::Tensor features = FeatureMap(images);
  RpnOutput rpn = Rpn(features, height, width);
  std::vector<torch::Tensor> proposals =
      Proposals(rpn, height, width, /*training=*/true);

  // RPN: sampled anchors against the ground truth.
  const int64_t num_anchors = rpn.anchors.size(0);
  std::vector<torch::Tensor> obj_logits, obj_labels, rpn_pred, rpn_target;
  // Box head: sampled proposals (plus the ground truth itself).
  std::vector<torch::Tensor> head_boxes, head_classes, head_target;
  for (size_t b = 0; b < targets.size(); ++b) {
    torch::Tensor gt = targets[b].boxes.to(device, torch::kFloat);
    torch::Tensor gt_labels = targets[b].labels.to(device, torch::kLong);

    torch::Tensor matches =
        det::MatchBoxes(det::BoxIou(gt, rpn.anchors), num_anchors,
                        options_.rpn_fg_iou, options_.rpn_bg_iou,
                        /*allow_low_quality=*/true);
    auto [pos, neg] = rpn_sampler_->Sample(SamplerLabels(matches));
    obj_logits.push_back(
        rpn.objectness[b].index_select(0, torch::cat({pos, neg})));
    obj_labels.push_back(
        torch::cat({torch::ones({pos.size(0)}, rpn.objectness.options()),
                    torch::zeros({neg.size(0)}, rpn.objectness.options())}));
    rpn_pred.push_back(rpn.deltas[b].index_select(0, pos));
    rpn_target.push_back(det::EncodeBoxes(
        gt.index_select(0, matches.index_select(0, pos)),
        rpn.anchors.index_select(0, pos), det::kRpnBoxWeights));

    torch::Tensor candidates = torch::cat({proposals[b], gt});
    torch::Tensor head_matches =
        det::MatchBoxes(det::BoxIou(gt, candidates), candidates.size(0),
                        options_.box_fg_iou, options_.box_bg_iou,
                        /*allow_low_quality=*/false);
    auto [hpos, hneg] = box_sampler_->Sample(SamplerLabels(head_matches));
    torch::Tensor matched_gt = head_matches.index_select(0, hpos);
    head_boxes.push_back(candidates.index_select(0, torch::cat({hpos, hneg})));
    head_classes.push_back(
        torch::cat({gt_labels.index_select(0, matched_gt) + 1,
                    torch::zeros({hneg.size(0)}, gt_labels.options())}));
    head_target.push_back(det::EncodeBoxes(gt.index_select(0, matched_gt),
                                           candidates.index_select(0, hpos),
                                           det::kHeadBoxWeights));
  }

  std::map<std::string, torch::Tensor> losses;
  torch::Tensor logits = torch::cat(obj_logits).to(torch::kFloat);
  losses["loss_objectness"] = torch::binary_cross_entropy_with_logits(
      logits, torch::cat(obj_labels).to(torch::kFloat));
  losses["loss_rpn_box_reg"] =
      torch::smooth_l1_loss(torch::cat(rpn_pred).to(torch::kFloat),
                            torch::cat(rpn_target), at::Reduction::Sum,
                            kSmoothL1Beta) /
      std::max<int64_t>(1, logits.size(0));

  auto [class_logits, box_deltas] = BoxHead(features, head_boxes);
  class_logits = class_logits.to(torch::kFloat);
  box_deltas = box_deltas.to(torch::kFloat);
  torch::Tensor classes = torch::cat(head_classes);
  losses["loss_classifier"] =
      torch::nn::functional::cross_entropy(class_logits, classes);
  torch::Tensor positive_rows = torch::nonzero(classes > 0).flatten();
  torch::Tensor positive_deltas =
      box_deltas.view({box_deltas.size(0), -1, 4})
          .index({positive_rows, classes.index_select(0, positive_rows)});
  losses["loss_box_reg"] =
      torch::smooth_l1_loss(positive_deltas, torch::cat(head_target),
                            at::Reduction::Sum, kSmoothL1Beta) /
      std::max<int64_t>(1, classes.size(0));
  return losses;
}

std::vector<Detections> FasterRCNNImpl::Detect(const torch::Tensor& images) {
  CheckInputs(images, nullptr);
  const int64_t height = images.size(2);
  const int64_t width = images.size(3);
  torch::Tensor features = FeatureMap(images);
  RpnOutput rpn = Rpn(features, height, width);
  std::vector<torch::Tensor> proposals =
      Proposals(rpn, height, width, /*training=*/false);
  auto [class_logits, box_deltas] = BoxHead(features, proposals);
  torch::Tensor probs = torch::softmax(class_logits.to(torch::kFloat), -1);
  box_deltas = box_deltas.to(torch::kFloat);

  const int64_t num_classes = options_.num_classes;
  std::vector<Detections> out;
  int64_t offset = 0;
  for (const torch::Tensor& props : proposals) {
    const int64_t n = props.size(0);
    torch::Tensor boxes = det::DecodeBoxes(box_deltas.narrow(0, offset, n),
                                           props, det::kHeadBoxWeights)
                              .view({n, num_classes + 1, 4});
    boxes = det::ClipBoxes(boxes, height, width).narrow(1, 1, num_classes);
    torch::Tensor scores = probs.narrow(0, offset, n).narrow(1, 1, num_classes);
    torch::Tensor labels =
        torch::arange(num_classes, props.options().dtype(torch::kLong))
            .unsqueeze(0)
            .expand({n, num_classes});
    offset += n;
    boxes = boxes.reshape({-1, 4});
    scores = scores.reshape(-1);
    labels = labels.reshape(-1);
    torch::Tensor keep =
        torch::nonzero(scores > options_.box_score_threshold).flatten();
    boxes = boxes.index_select(0, keep);
    scores = scores.index_select(0, keep);
    labels = labels.index_select(0, keep);
    keep = det::NonSmallBoxes(boxes, kMinDetectionSize);
    boxes = boxes.index_select(0, keep);
    scores = scores.index_select(0, keep);
    labels = labels.index_select(0, keep);
    keep = det::BatchedNms(boxes, scores, labels, options_.box_nms_threshold);
    keep = keep.narrow(0, 0,
                       std::min(options_.detections_per_image, keep.size(0)));
    out.push_back({boxes.index_select(0, keep), scores.index_select(0, keep),
                   labels.index_select(0, keep)});
  }
  return out;
}

torch::Tensor FasterRCNNImpl::TotalLoss(
    const std::map<std::string, torch::Tensor>& losses) {
  Require(!losses.empty(), "no losses to sum");
  torch::Tensor total;
  for (const auto& [name, value] : losses) {
    total = total.defined() ? total + value : value;
  }
  return total;
}

}  // namespace hpcai500::worker
