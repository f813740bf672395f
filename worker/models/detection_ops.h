// Detection building blocks for Faster R-CNN, written with ATen operations
// only (there is no torchvision C++ library here), so every op runs on
// whatever device its inputs live on: box IoU, box-delta encoding, clipping,
// exact greedy NMS (per class via coordinate offsets), RoIAlign with
// torchvision's `aligned=True` semantics, anchor generation, the IoU matcher
// and the balanced positive/negative sampler.
//
// Box convention everywhere: float [N, 4] rows (x1, y1, x2, y2) in input
// pixels, continuous coordinates, width = x2 - x1 (no +1). Pixel (i, j) of a
// map covers [j, j + 1) x [i, i + 1); its centre is (j + 0.5, i + 0.5).
//
// Thread-safety: the free functions are pure. BalancedSampler holds a
// generator and must be used by one thread at a time.
#ifndef HPCAI500_WORKER_MODELS_DETECTION_OPS_H_
#define HPCAI500_WORKER_MODELS_DETECTION_OPS_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace hpcai500::worker::detection {

// Areas of [N, 4] boxes -> [N] (zero or negative for degenerate boxes).
torch::Tensor BoxArea(const torch::Tensor& boxes);

// Pairwise IoU of a [N, 4] and b [M, 4] -> [N, M]; 0 where the union is
// empty. Throws std::invalid_argument unless both are [*, 4].
torch::Tensor BoxIou(const torch::Tensor& a, const torch::Tensor& b);

// Weights (wx, wy, ww, wh) of the Faster R-CNN box parametrisation:
// dx = wx (gx - px) / pw, dy = wy (gy - py) / ph, dw = ww log(gw / pw),
// dh = wh log(gh / ph) with centres (x, y) and sizes (w, h).
using BoxWeights = std::array<double, 4>;
inline constexpr BoxWeights kRpnBoxWeights = {1.0, 1.0, 1.0, 1.0};
inline constexpr BoxWeights kHeadBoxWeights = {10.0, 10.0, 5.0, 5.0};

// Deltas [N, 4] that move `reference` [N, 4] onto `target` [N, 4].
torch::Tensor EncodeBoxes(const torch::Tensor& target,
                          const torch::Tensor& reference,
                          const BoxWeights& weights);

// Boxes from deltas [N, 4 * k] applied to reference boxes [N, 4] ->
// [N, 4 * k]. dw and dh are clamped at log(1000 / 16) so exp cannot overflow.
torch::Tensor DecodeBoxes(const torch::Tensor& deltas,
                          const torch::Tensor& reference,
                          const BoxWeights& weights);

// Boxes [..., 4] clamped into [0, width] x [0, height].
torch::Tensor ClipBoxes(const torch::Tensor& boxes, int64_t height,
                        int64_t width);

// Indices (int64 [K]) of boxes whose width and height are both >= min_size.
torch::Tensor NonSmallBoxes(const torch::Tensor& boxes, double min_size);

// Exact greedy NMS: indices (int64 [K], on boxes' device) of the boxes kept,
// by decreasing score; a box is dropped when its IoU with a kept, higher
// scoring box is > iou_threshold. The IoU matrix is computed on the device;
// the greedy scan reads it once on the host. Ties keep the lower index.
torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                  double iou_threshold);

// NMS within each class of `classes` (int64 [N]) independently, by shifting
// each class's boxes to a disjoint region. Indices by decreasing score.
torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores,
                         const torch::Tensor& classes, double iou_threshold);

struct RoiAlignOptions {
  int64_t output_height = 7;
  int64_t output_width = 7;
  double spatial_scale = 1.0;  // feature pixels per input pixel
  int64_t sampling_ratio = 2;  // samples per bin side; must be >= 1
  bool aligned = true;         // shift by -0.5 pixel as torchvision
  // Bilinear sampling is separable, so when the RoIs' interpolation
  // matrices (RoIs x output_height x output_width x H x W values) hold at
  // most this many elements, RoiAlign is one matrix product per image with
  // them (fast on small feature maps, no sample tensor); otherwise it
  // samples with grid_sample. Same result either way.
  int64_t separable_max_elements = int64_t{1} << 24;
};

// RoIAlign as torchvision.ops.roi_align for sampling_ratio > 0: each output
// bin averages sampling_ratio^2 bilinear samples; samples outside
// [-1, H] x [-1, W] count as 0, others are clamped to the border.
// features: [B, C, H, W]; rois: [K, 5] rows (batch_index, x1, y1, x2, y2) in
// input pixels. Returns [K, C, output_height, output_width], differentiable
// with respect to `features`. Throws std::invalid_argument on bad shapes or
// options.
torch::Tensor RoiAlign(const torch::Tensor& features, const torch::Tensor& rois,
                       const RoiAlignOptions& options);

// Anchors for one feature level of size feature_height x feature_width and
// stride `stride` (input pixels per feature pixel): for every location in
// row-major order, one box per (size, aspect ratio) pair in that order,
// centred on the location's centre ((x + 0.5) stride, (y + 0.5) stride),
// with area size^2 and height / width = aspect ratio. Returns float
// [feature_height * feature_width * A, 4] on `device`.
torch::Tensor GenerateAnchors(const std::vector<double>& sizes,
                              const std::vector<double>& aspect_ratios,
                              int64_t feature_height, int64_t feature_width,
                              double stride, const torch::Device& device);

// Assigns each of N candidates to its best ground truth from an IoU matrix
// [G, N]: int64 [N] with the matched index, kBelowLow (background) when the
// best IoU < low, kBetween (ignored) when low <= IoU < high. With
// allow_low_quality, each ground truth also claims the candidates that share
// its highest IoU even below `high`. G == 0 gives all kBelowLow.
inline constexpr int64_t kBelowLow = -1;
inline constexpr int64_t kBetween = -2;
torch::Tensor MatchBoxes(const torch::Tensor& iou, int64_t num_candidates,
                         double high, double low, bool allow_low_quality);

// Samples up to batch_size_per_image labelled candidates per image, at most
// positive_fraction of them positive, the rest negative, uniformly at random
// from a seeded generator (reproducible for a given seed and call order).
class BalancedSampler {
 public:
  // Throws std::invalid_argument unless batch_size_per_image >= 1 and
  // 0 < positive_fraction <= 1.
  BalancedSampler(int64_t batch_size_per_image, double positive_fraction,
                  uint64_t seed);

  // labels: int64 [N], 1 positive, 0 negative, -1 ignored. Returns int64
  // indices (on labels' device) of the sampled positives and negatives.
  std::pair<torch::Tensor, torch::Tensor> Sample(const torch::Tensor& labels);

 private:
  torch::Tensor Pick(const torch::Tensor& candidates, int64_t count);

  // Constant after construction.
  int64_t batch_size_per_image_;
  double positive_fraction_;
  // Advanced by every Sample call.
  at::Generator generator_;
};

}  // namespace hpcai500::worker::detection

#endif  // HPCAI500_WORKER_MODELS_DETECTION_OPS_H_
