#include "worker/models/detection_ops.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace hpcai500::worker::detection {
namespace {

void RequireBoxes(const torch::Tensor& boxes, const char* what) {
  if (boxes.dim() != 2 || boxes.size(1) != 4) {
    throw std::invalid_argument(std::string(what) +
                                " must be [N, 4] boxes, got shape " +
                                c10::str(boxes.sizes()));
  }
}

// Columns of [N, 4 * k] (or [N, 4]) boxes or deltas: column `c` of every
// group of four -> [N, k].
torch::Tensor Column(const torch::Tensor& t, int64_t c) {
  return t.slice(/*dim=*/1, /*start=*/c, /*end=*/c10::nullopt, /*step=*/4);
}

// Sample coordinates along one axis for every RoI: [K, bins * sampling_ratio]
// feature-pixel positions, pixel i having its centre at i.
torch::Tensor SamplePositions(const torch::Tensor& start,
                              const torch::Tensor& end, int64_t bins,
                              const RoiAlignOptions& options) {
  const double offset = options.aligned ? 0.5 : 0.0;
  torch::Tensor first = start * options.spatial_scale - offset;
  torch::Tensor length = end * options.spatial_scale - offset - first;
  if (!options.aligned) length = length.clamp_min(1.0);
  const int64_t samples = bins * options.sampling_ratio;
  torch::Tensor steps =
      torch::arange(samples, start.options()).add_(0.5).div_(samples);
  return first.unsqueeze(1) + length.unsqueeze(1) * steps.unsqueeze(0);
}

// RoIAlign's bilinear weights along one axis of `size` pixels: [K, bins,
// size], row (k, b) averaging the bin's `sampling_ratio` samples of
// `positions` [K, bins * sampling_ratio] exactly as torchvision does
// (samples beyond [-1, size] weigh nothing, the rest are clamped to the
// border).
torch::Tensor AxisWeights(const torch::Tensor& positions, int64_t size,
                          int64_t bins, int64_t sampling_ratio) {
  const double last = static_cast<double>(size - 1);
  torch::Tensor valid =
      ((positions >= -1) & (positions <= size)).to(positions.scalar_type());
  torch::Tensor p = positions.clamp_min(0);
  torch::Tensor low = p.floor().clamp_max(last);
  torch::Tensor frac = torch::where(low >= last, torch::zeros_like(p), p - low);
  torch::Tensor high = (low + 1).clamp_max(last);
  torch::Tensor weights = torch::zeros(
      {positions.size(0), positions.size(1), size}, positions.options());
  weights.scatter_add_(2, low.to(torch::kLong).unsqueeze(2),
                       ((1 - frac) * valid).unsqueeze(2));
  weights.scatter_add_(2, high.to(torch::kLong).unsqueeze(2),
                       (frac * valid).unsqueeze(2));
  return weights.view({positions.size(0), bins, sampling_ratio, size})
      .sum(/*dim=*/2)
      .div_(static_cast<double>(sampling_ratio));
}

}  // namespace

torch::Tensor BoxArea(const torch::Tensor& boxes) {
  RequireBoxes(boxes, "BoxArea input");
  return (boxes.select(1, 2) - boxes.select(1, 0)) *
         (boxes.select(1, 3) - boxes.select(1, 1));
}

torch::Tensor BoxIou(const torch::Tensor& a, const torch::Tensor& b) {
  RequireBoxes(a, "BoxIou first argument");
  RequireBoxes(b, "BoxIou second argument");
  torch::Tensor lt =
      torch::max(a.slice(1, 0, 2).unsqueeze(1), b.slice(1, 0, 2).unsqueeze(0));
  torch::Tensor rb =
      torch::min(a.slice(1, 2, 4).unsqueeze(1), b.slice(1, 2, 4).unsqueeze(0));
  torch::Tensor wh = (rb - lt).clamp_min(0);
  torch::Tensor inter = wh.select(2, 0) * wh.select(2, 1);
  torch::Tensor uni = BoxArea(a).unsqueeze(1) + BoxArea(b).unsqueeze(0) - inter;
  return torch::where(uni > 0, inter / uni, torch::zeros_like(inter));
}

torch::Tensor EncodeBoxes(const torch::Tensor& target,
                          const torch::Tensor& reference,
                          const BoxWeights& weights) {
  RequireBoxes(target, "EncodeBoxes target");
  RequireBoxes(reference, "EncodeBoxes reference");
  torch::Tensor pw = reference.select(1, 2) - reference.select(1, 0);
  torch::Tensor ph = reference.select(1, 3) - reference.select(1, 1);
  torch::Tensor px = reference.select(1, 0) + 0.5 * pw;
  torch::Tensor py = reference.select(1, 1) + 0.5 * ph;
  torch::Tensor gw = target.select(1, 2) - target.select(1, 0);
  torch::Tensor gh = target.select(1, 3) - target.select(1, 1);
  torch::Tensor gx = target.select(1, 0) + 0.5 * gw;
  torch::Tensor gy = target.select(1, 1) + 0.5 * gh;
  return torch::stack(
      {weights[0] * (gx - px) / pw, weights[1] * (gy - py) / ph,
       weights[2] * torch::log(gw / pw), weights[3] * torch::log(gh / ph)},
      /*dim=*/1);
}

torch::Tensor DecodeBoxes(const torch::Tensor& deltas,
                          const torch::Tensor& reference,
                          const BoxWeights& weights) {
  RequireBoxes(reference, "DecodeBoxes reference");
  if (deltas.dim() != 2 || deltas.size(1) % 4 != 0 ||
      deltas.size(0) != reference.size(0)) {
    throw std::invalid_argument("DecodeBoxes deltas must be [N, 4k] with N = " +
                                std::to_string(reference.size(0)) + ", got " +
                                c10::str(deltas.sizes()));
  }
  static const double kMaxLogScale = std::log(1000.0 / 16.0);
  torch::Tensor ref = reference.to(deltas.scalar_type());
  torch::Tensor pw = (ref.select(1, 2) - ref.select(1, 0)).unsqueeze(1);
  torch::Tensor ph = (ref.select(1, 3) - ref.select(1, 1)).unsqueeze(1);
  torch::Tensor px = ref.select(1, 0).unsqueeze(1) + 0.5 * pw;
  torch::Tensor py = ref.select(1, 1).unsqueeze(1) + 0.5 * ph;
  torch::Tensor cx = Column(deltas, 0) / weights[0] * pw + px;
  torch::Tensor cy = Column(deltas, 1) / weights[1] * ph + py;
  torch::Tensor w =
      torch::exp((Column(deltas, 2) / weights[2]).clamp_max(kMaxLogScale)) * pw;
  torch::Tensor h =
      torch::exp((Column(deltas, 3) / weights[3]).clamp_max(kMaxLogScale)) * ph;
  return torch::stack({cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h},
                      /*dim=*/2)
      .flatten(1);
}

torch::Tensor ClipBoxes(const torch::Tensor& boxes, int64_t height,
                        int64_t width) {
  const double w = static_cast<double>(width);
  const double h = static_cast<double>(height);
  return torch::stack(
      {boxes.select(-1, 0).clamp(0.0, w), boxes.select(-1, 1).clamp(0.0, h),
       boxes.select(-1, 2).clamp(0.0, w), boxes.select(-1, 3).clamp(0.0, h)},
      /*dim=*/-1);
}

torch::Tensor NonSmallBoxes(const torch::Tensor& boxes, double min_size) {
  RequireBoxes(boxes, "NonSmallBoxes input");
  torch::Tensor w = boxes.select(1, 2) - boxes.select(1, 0);
  torch::Tensor h = boxes.select(1, 3) - boxes.select(1, 1);
  return torch::nonzero((w >= min_size) & (h >= min_size)).flatten();
}

torch::Tensor Nms(const torch::Tensor& boxes, const torch::Tensor& scores,
                  double iou_threshold) {
  RequireBoxes(boxes, "Nms boxes");
  if (scores.dim() != 1 || scores.size(0) != boxes.size(0)) {
    throw std::invalid_argument("Nms scores must be [" +
                                std::to_string(boxes.size(0)) + "], got " +
                                c10::str(scores.sizes()));
  }
  const int64_t n = boxes.size(0);
  if (n == 0) return torch::empty({0}, boxes.options().dtype(torch::kLong));
  torch::Tensor order = std::get<1>(
      torch::sort(scores, /*stable=*/true, /*dim=*/0, /*descending=*/true));
  torch::Tensor sorted = boxes.index_select(0, order).to(torch::kFloat);
  // Row i marks the lower-scored boxes that box i suppresses if kept.
  torch::Tensor suppress =
      (BoxIou(sorted, sorted) > iou_threshold).to(torch::kCPU).contiguous();
  const bool* mask = suppress.data_ptr<bool>();
  std::vector<uint8_t> removed(static_cast<size_t>(n), 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (removed[i]) continue;
    keep.push_back(i);
    const bool* row = mask + i * n;
    for (int64_t j = i + 1; j < n; ++j) {
      if (row[j]) removed[j] = 1;
    }
  }
  torch::Tensor kept = torch::tensor(keep, torch::kLong)
                           .to(boxes.device(), /*non_blocking=*/false);
  return order.index_select(0, kept);
}

torch::Tensor BatchedNms(const torch::Tensor& boxes,
                         const torch::Tensor& scores,
                         const torch::Tensor& classes, double iou_threshold) {
  RequireBoxes(boxes, "BatchedNms boxes");
  if (boxes.size(0) == 0) {
    return torch::empty({0}, boxes.options().dtype(torch::kLong));
  }
  if (classes.dim() != 1 || classes.size(0) != boxes.size(0)) {
    throw std::invalid_argument("BatchedNms classes must be [" +
                                std::to_string(boxes.size(0)) + "], got " +
                                c10::str(classes.sizes()));
  }
  torch::Tensor as_float = boxes.to(torch::kFloat);
  torch::Tensor span = as_float.max() - as_float.min() + 1;
  torch::Tensor offsets = classes.to(torch::kFloat) * span;
  return Nms(as_float + offsets.unsqueeze(1), scores, iou_threshold);
}

namespace {

void CheckRoiAlignArguments(const torch::Tensor& features,
                            const torch::Tensor& rois,
                            const RoiAlignOptions& options) {
  if (features.dim() != 4) {
    throw std::invalid_argument("RoiAlign features must be [B, C, H, W], got " +
                                c10::str(features.sizes()));
  }
  if (rois.dim() != 2 || rois.size(1) != 5) {
    throw std::invalid_argument(
        "RoiAlign rois must be [K, 5] (batch_index, x1, y1, x2, y2), got " +
        c10::str(rois.sizes()));
  }
  if (options.sampling_ratio < 1 || options.output_height < 1 ||
      options.output_width < 1 || options.spatial_scale <= 0) {
    throw std::invalid_argument(
        "RoiAlign needs sampling_ratio, output sizes >= 1 and spatial_scale > "
        "0");
  }
}

// Pools the RoIs of each image with `pool(b, idx)` (idx: the rows of
// `batch_index` equal to b) and returns the results in RoI order.
torch::Tensor PoolPerImage(
    int64_t images, const torch::Tensor& batch_index,
    const std::function<torch::Tensor(int64_t, const torch::Tensor&)>& pool) {
  std::vector<torch::Tensor> pooled;
  std::vector<torch::Tensor> order;
  for (int64_t b = 0; b < images; ++b) {
    torch::Tensor idx = torch::nonzero(batch_index == b).flatten();
    if (idx.size(0) == 0) continue;
    pooled.push_back(pool(b, idx));
    order.push_back(idx);
  }
  torch::Tensor all_order = torch::cat(order);
  return torch::cat(pooled).index_select(0, torch::argsort(all_order));
}

// out[k, c, i, j] = sum_{h, w} Wy[k, i, h] Wx[k, j, w] F[b_k, c, h, w]: one
// matrix product per image with the RoIs' interpolation matrices
// M[k, (i, j), (h, w)] = Wy[k, i, h] Wx[k, j, w].
torch::Tensor RoiAlignSeparable(const torch::Tensor& features,
                                const torch::Tensor& ys,
                                const torch::Tensor& xs,
                                const torch::Tensor& batch_index,
                                const RoiAlignOptions& options) {
  const int64_t channels = features.size(1);
  const int64_t height = features.size(2);
  const int64_t width = features.size(3);
  const int64_t out_h = options.output_height;
  const int64_t out_w = options.output_width;
  const int64_t sr = options.sampling_ratio;
  torch::Tensor wy = AxisWeights(ys, height, out_h, sr);  // [K, out_h, H]
  torch::Tensor wx = AxisWeights(xs, width, out_w, sr);   // [K, out_w, W]
  torch::Tensor m =
      (wy.view({-1, out_h, 1, height, 1}) * wx.view({-1, 1, out_w, 1, width}))
          .view({-1, out_h * out_w, height * width})
          .to(features.scalar_type());
  return PoolPerImage(
      features.size(0), batch_index, [&](int64_t b, const torch::Tensor& idx) {
        const int64_t k = idx.size(0);
        // [k * out_h * out_w, H * W] x [H * W, C] -> [k, i, j, c].
        torch::Tensor o = torch::matmul(
            m.index_select(0, idx).view({k * out_h * out_w, height * width}),
            features[b].reshape({channels, height * width}).t());
        return o.view({k, out_h, out_w, channels})
            .permute({0, 3, 1, 2})
            .contiguous();
      });
}

// grid_sample at every sampling point, then the average of each bin's
// sr x sr samples.
torch::Tensor RoiAlignGridSample(const torch::Tensor& features,
                                 const torch::Tensor& ys,
                                 const torch::Tensor& xs,
                                 const torch::Tensor& batch_index,
                                 const RoiAlignOptions& options) {
  const int64_t channels = features.size(1);
  const int64_t height = features.size(2);
  const int64_t width = features.size(3);
  const int64_t sr = options.sampling_ratio;
  // Samples beyond one pixel outside the map read zero; the rest are
  // clamped to the border, exactly grid_sample's "border" padding.
  torch::Tensor valid = ((ys >= -1) & (ys <= height)).unsqueeze(2) &
                        ((xs >= -1) & (xs <= width)).unsqueeze(1);
  // grid_sample(align_corners=false) puts pixel i's centre at
  // (2 i + 1) / size - 1.
  torch::Tensor gx = (2 * xs + 1) / width - 1;
  torch::Tensor gy = (2 * ys + 1) / height - 1;
  const int64_t sample_h = ys.size(1);
  const int64_t sample_w = xs.size(1);
  torch::Tensor grid =
      torch::stack({gx.unsqueeze(1).expand({-1, sample_h, -1}),
                    gy.unsqueeze(2).expand({-1, -1, sample_w})},
                   /*dim=*/3)
          .to(features.scalar_type());
  namespace F = torch::nn::functional;
  const auto sample_options = F::GridSampleFuncOptions()
                                  .mode(torch::kBilinear)
                                  .padding_mode(torch::kBorder)
                                  .align_corners(false);
  return PoolPerImage(
      features.size(0), batch_index, [&](int64_t b, const torch::Tensor& idx) {
        const int64_t k = idx.size(0);
        torch::Tensor g =
            grid.index_select(0, idx).reshape({1, k * sample_h, sample_w, 2});
        torch::Tensor s =
            F::grid_sample(features.narrow(0, b, 1), g, sample_options)
                .view({channels, k, sample_h, sample_w})
                .permute({1, 0, 2, 3});
        s = s * valid.index_select(0, idx).unsqueeze(1).to(s.scalar_type());
        return torch::avg_pool2d(s, /*kernel_size=*/{sr, sr},
                                 /*stride=*/{sr, sr});
      });
}

}  // namespace

torch::Tensor RoiAlign(const torch::Tensor& features, const torch::Tensor& rois,
                       const RoiAlignOptions& options) {
  CheckRoiAlignArguments(features, rois, options);
  if (rois.size(0) == 0) {
    return features.new_zeros(
        {0, features.size(1), options.output_height, options.output_width});
  }
  // Coordinates stay in float even for half features: 1152 needs 11 bits.
  torch::Tensor r = rois.detach().to(torch::kFloat);
  torch::Tensor xs = SamplePositions(r.select(1, 1), r.select(1, 3),
                                     options.output_width, options);
  torch::Tensor ys = SamplePositions(r.select(1, 2), r.select(1, 4),
                                     options.output_height, options);
  torch::Tensor batch_index = rois.select(1, 0).to(torch::kLong);
  if (batch_index.min().item<int64_t>() < 0 ||
      batch_index.max().item<int64_t>() >= features.size(0)) {
    throw std::invalid_argument("RoiAlign batch indices must lie in [0, " +
                                std::to_string(features.size(0)) + ")");
  }
  if (rois.size(0) * options.output_height * options.output_width *
          features.size(2) * features.size(3) <=
      options.separable_max_elements) {
    return RoiAlignSeparable(features, ys, xs, batch_index, options);
  }
  return RoiAlignGridSample(features, ys, xs, batch_index, options);
}

torch::Tensor GenerateAnchors(const std::vector<double>& sizes,
                              const std::vector<double>& aspect_ratios,
                              int64_t feature_height, int64_t feature_width,
                              double stride, const torch::Device& device) {
  if (sizes.empty() || aspect_ratios.empty()) {
    throw std::invalid_argument("anchor sizes and aspect ratios must be set");
  }
  std::vector<float> base;
  for (double size : sizes) {
    for (double ratio : aspect_ratios) {
      if (size <= 0 || ratio <= 0) {
        throw std::invalid_argument(
            "anchor sizes and aspect ratios must be positive, got size " +
            std::to_string(size) + " ratio " + std::to_string(ratio));
      }
      const double h = size * std::sqrt(ratio);
      const double w = size / std::sqrt(ratio);
      base.insert(base.end(),
                  {static_cast<float>(-w / 2), static_cast<float>(-h / 2),
                   static_cast<float>(w / 2), static_cast<float>(h / 2)});
    }
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  torch::Tensor cell =
      torch::tensor(base, torch::kFloat).to(device).view({-1, 4});
  torch::Tensor cy = torch::arange(feature_height, opts).add_(0.5).mul_(stride);
  torch::Tensor cx = torch::arange(feature_width, opts).add_(0.5).mul_(stride);
  std::vector<torch::Tensor> mesh =
      torch::meshgrid({cy, cx}, /*indexing=*/"ij");
  torch::Tensor y = mesh[0].reshape(-1);
  torch::Tensor x = mesh[1].reshape(-1);
  torch::Tensor centres = torch::stack({x, y, x, y}, /*dim=*/1);
  return (centres.unsqueeze(1) + cell.unsqueeze(0)).reshape({-1, 4});
}

torch::Tensor MatchBoxes(const torch::Tensor& iou, int64_t num_candidates,
                         double high, double low, bool allow_low_quality) {
  if (iou.dim() != 2 || iou.size(1) != num_candidates) {
    throw std::invalid_argument("MatchBoxes iou must be [G, " +
                                std::to_string(num_candidates) + "], got " +
                                c10::str(iou.sizes()));
  }
  if (iou.size(0) == 0) {
    return torch::full({num_candidates}, kBelowLow,
                       iou.options().dtype(torch::kLong));
  }
  auto [best, best_gt] = iou.max(/*dim=*/0);
  torch::Tensor matches = best_gt.clone();
  matches.masked_fill_(best < low, kBelowLow);
  matches.masked_fill_((best >= low) & (best < high), kBetween);
  if (allow_low_quality) {
    torch::Tensor best_per_gt = std::get<0>(iou.max(/*dim=*/1)).unsqueeze(1);
    torch::Tensor claimed =
        ((iou == best_per_gt) & (best_per_gt > 0)).any(/*dim=*/0);
    matches = torch::where(claimed, best_gt, matches);
  }
  return matches;
}

BalancedSampler::BalancedSampler(int64_t batch_size_per_image,
                                 double positive_fraction, uint64_t seed)
    : batch_size_per_image_(batch_size_per_image),
      positive_fraction_(positive_fraction),
      generator_(at::detail::createCPUGenerator(seed)) {
  if (batch_size_per_image < 1) {
    throw std::invalid_argument("sampler batch_size_per_image must be >= 1");
  }
  if (!(positive_fraction > 0 && positive_fraction <= 1)) {
    throw std::invalid_argument(
        "sampler positive_fraction must lie in (0, 1], got " +
        std::to_string(positive_fraction));
  }
}

torch::Tensor BalancedSampler::Pick(const torch::Tensor& candidates,
                                    int64_t count) {
  if (count >= candidates.size(0)) return candidates;
  torch::Tensor perm =
      torch::randperm(candidates.size(0), generator_,
                      torch::TensorOptions().dtype(torch::kLong))
          .narrow(0, 0, count)
          .to(candidates.device());
  return candidates.index_select(0, perm);
}

std::pair<torch::Tensor, torch::Tensor> BalancedSampler::Sample(
    const torch::Tensor& labels) {
  torch::Tensor positives = torch::nonzero(labels == 1).flatten();
  torch::Tensor negatives = torch::nonzero(labels == 0).flatten();
  const int64_t max_positive = static_cast<int64_t>(
      static_cast<double>(batch_size_per_image_) * positive_fraction_);
  const int64_t num_positive = std::min(positives.size(0), max_positive);
  const int64_t num_negative =
      std::min(negatives.size(0), batch_size_per_image_ - num_positive);
  torch::Tensor pos = Pick(positives, num_positive);
  torch::Tensor neg = Pick(negatives, num_negative);
  return {pos, neg};
}

}  // namespace hpcai500::worker::detection
