#include "worker/models/detection_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace hpcai500::worker::detection {
namespace {

torch::Tensor Boxes(std::vector<float> values) {
  return torch::tensor(values, torch::kFloat).view({-1, 4});
}

std::vector<int64_t> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(),
                              c.data_ptr<int64_t>() + c.numel());
}

TEST(BoxIou, MatchesHandComputedOverlaps) {
  torch::Tensor a = Boxes({0, 0, 2, 2, 0, 0, 1, 1});
  torch::Tensor b = Boxes({1, 1, 3, 3, 0, 0, 2, 2, 5, 5, 6, 6, 4, 4, 4, 4});
  torch::Tensor iou = BoxIou(a, b);
  ASSERT_EQ(iou.sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_NEAR(iou[0][0].item<float>(), 1.0 / 7.0, 1e-6);  // 1 / (4 + 4 - 1)
  EXPECT_NEAR(iou[0][1].item<float>(), 1.0, 1e-6);
  EXPECT_EQ(iou[0][2].item<float>(), 0.0f);
  EXPECT_EQ(iou[0][3].item<float>(), 0.0f);  // empty box, no NaN
  EXPECT_NEAR(iou[1][1].item<float>(), 0.25, 1e-6);
}

TEST(BoxIou, RejectsNonBoxShapes) {
  EXPECT_THROW(BoxIou(torch::zeros({3, 5}), Boxes({0, 0, 1, 1})),
               std::invalid_argument);
}

TEST(BoxCoder, EncodesAHandCaseAndRoundTrips) {
  torch::Tensor reference = Boxes({0, 0, 10, 10});
  torch::Tensor target = Boxes({5, 0, 15, 20});
  torch::Tensor d = EncodeBoxes(target, reference, kRpnBoxWeights);
  EXPECT_NEAR(d[0][0].item<float>(), 0.5, 1e-6);  // centre x moved 5 of 10
  EXPECT_NEAR(d[0][1].item<float>(), 0.5, 1e-6);  // centre y 5 -> 10
  EXPECT_NEAR(d[0][2].item<float>(), 0.0, 1e-6);
  EXPECT_NEAR(d[0][3].item<float>(), std::log(2.0), 1e-6);

  torch::manual_seed(3);
  torch::Tensor xy = torch::rand({50, 2}) * 100;
  torch::Tensor refs = torch::cat({xy, xy + 1 + torch::rand({50, 2}) * 60}, 1);
  torch::Tensor xy2 = torch::rand({50, 2}) * 100;
  torch::Tensor tgts =
      torch::cat({xy2, xy2 + 1 + torch::rand({50, 2}) * 60}, 1);
  torch::Tensor deltas = EncodeBoxes(tgts, refs, kHeadBoxWeights);
  EXPECT_TRUE(torch::allclose(DecodeBoxes(deltas, refs, kHeadBoxWeights), tgts,
                              /*rtol=*/1e-4, /*atol=*/1e-3));
}

TEST(BoxCoder, DecodesSeveralClassesPerRow) {
  torch::Tensor reference = Boxes({0, 0, 10, 10});
  torch::Tensor deltas =
      torch::tensor({0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f}).view({1, 8});
  torch::Tensor out = DecodeBoxes(deltas, reference, kRpnBoxWeights);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(torch::allclose(
      out, torch::tensor({0.f, 0.f, 10.f, 10.f, 10.f, 0.f, 20.f, 10.f})
               .view({1, 8})));
}

TEST(ClipBoxes, ClampsIntoTheImage) {
  torch::Tensor clipped = ClipBoxes(Boxes({-5, -1, 200, 50}), 40, 100);
  EXPECT_TRUE(torch::equal(clipped, Boxes({0, 0, 100, 40})));
}

TEST(Nms, KeepsTheExactGreedySet) {
  // B overlaps A (IoU 0.43) and C (0.43); C does not overlap A (0.11).
  // Greedy keeps D, A, then C because B, its only suppressor, is gone.
  torch::Tensor boxes =
      Boxes({0, 0, 10, 10, 4, 0, 14, 10, 8, 0, 18, 10, 50, 50, 60, 60});
  torch::Tensor scores = torch::tensor({0.9f, 0.8f, 0.7f, 0.95f});
  EXPECT_EQ(ToVector(Nms(boxes, scores, 0.3)), (std::vector<int64_t>{3, 0, 2}));
  EXPECT_EQ(ToVector(Nms(boxes, scores, 0.5)),
            (std::vector<int64_t>{3, 0, 1, 2}));
  EXPECT_EQ(Nms(torch::zeros({0, 4}), torch::zeros({0}), 0.5).numel(), 0);
}

TEST(Nms, BatchedSuppressesOnlyWithinAClass) {
  torch::Tensor boxes = Boxes({0, 0, 10, 10, 1, 1, 10, 10, 0, 0, 10, 10});
  torch::Tensor scores = torch::tensor({0.9f, 0.8f, 0.7f});
  torch::Tensor classes = torch::tensor({0, 0, 1}, torch::kLong);
  EXPECT_EQ(ToVector(BatchedNms(boxes, scores, classes, 0.5)),
            (std::vector<int64_t>{0, 2}));
  torch::Tensor all_one_class = torch::zeros({3}, torch::kLong);
  EXPECT_EQ(ToVector(BatchedNms(boxes, scores, all_one_class, 0.5)),
            (std::vector<int64_t>{0}));
}

// torchvision's roi_align algorithm for one output value, one sample at a
// time, as the reference.
float ReferenceRoiAlign(const torch::Tensor& f, int64_t c, float x1, float y1,
                        float x2, float y2, int64_t ph, int64_t pw,
                        const RoiAlignOptions& o) {
  const int64_t height = f.size(1);
  const int64_t width = f.size(2);
  auto a = f.accessor<float, 3>();
  const double offset = o.aligned ? 0.5 : 0.0;
  const double sx = x1 * o.spatial_scale - offset;
  const double sy = y1 * o.spatial_scale - offset;
  double rw = x2 * o.spatial_scale - offset - sx;
  double rh = y2 * o.spatial_scale - offset - sy;
  if (!o.aligned) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  const double bw = rw / o.output_width;
  const double bh = rh / o.output_height;
  const int64_t n = o.sampling_ratio;
  double sum = 0;
  for (int64_t iy = 0; iy < n; ++iy) {
    for (int64_t ix = 0; ix < n; ++ix) {
      double y = sy + ph * bh + (iy + 0.5) * bh / n;
      double x = sx + pw * bw + (ix + 0.5) * bw / n;
      if (y < -1 || y > height || x < -1 || x > width) continue;
      y = std::max(y, 0.0);
      x = std::max(x, 0.0);
      int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
      int64_t y1i = y0 + 1, x1i = x0 + 1;
      if (y0 >= height - 1) y0 = y1i = height - 1, y = static_cast<double>(y0);
      if (x0 >= width - 1) x0 = x1i = width - 1, x = static_cast<double>(x0);
      const double ly = y - y0, lx = x - x0;
      sum += (1 - ly) * (1 - lx) * a[c][y0][x0] +
             (1 - ly) * lx * a[c][y0][x1i] + ly * (1 - lx) * a[c][y1i][x0] +
             ly * lx * a[c][y1i][x1i];
    }
  }
  return static_cast<float>(sum / (n * n));
}

torch::Tensor Ramp(int64_t height, int64_t width) {
  // f(y, x) = x + 10 y at pixel (y, x): bilinear sampling is exact on it.
  torch::Tensor y = torch::arange(height, torch::kFloat).view({-1, 1});
  torch::Tensor x = torch::arange(width, torch::kFloat).view({1, -1});
  return (x + 10 * y).view({1, 1, height, width});
}

TEST(RoiAlign, AveragesALinearRampExactly) {
  RoiAlignOptions o;
  o.output_height = 2;
  o.output_width = 2;
  o.sampling_ratio = 2;
  // Aligned: the box [2, 6) x [1, 5) covers pixels 2..5 and rows 1..4, so
  // bin (i, j) averages columns 2 + 2j, 3 + 2j and rows 1 + 2i, 2 + 2i.
  torch::Tensor out =
      RoiAlign(Ramp(8, 8), torch::tensor({{0.f, 2.f, 1.f, 6.f, 5.f}}), o);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{1, 1, 2, 2}));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_NEAR(out[0][0][i][j].item<float>(),
                  2.5 + 2 * j + 10 * (1.5 + 2 * i), 1e-4);
    }
  }
  // A stride-2 feature map sees the same box at twice the input size.
  o.spatial_scale = 0.5;
  torch::Tensor scaled =
      RoiAlign(Ramp(8, 8), torch::tensor({{0.f, 4.f, 2.f, 12.f, 10.f}}), o);
  EXPECT_TRUE(torch::allclose(scaled, out, 1e-5, 1e-4));
  // Without alignment the samples sit half a pixel further right and down.
  o.spatial_scale = 1.0;
  o.aligned = false;
  torch::Tensor unaligned =
      RoiAlign(Ramp(8, 8), torch::tensor({{0.f, 2.f, 1.f, 6.f, 5.f}}), o);
  EXPECT_TRUE(torch::allclose(unaligned, out + 0.5 + 10 * 0.5, 1e-5, 1e-4));
}

TEST(RoiAlign, MatchesTheReferenceOnRandomBoxesAndBorders) {
  torch::manual_seed(7);
  torch::Tensor features = torch::randn({2, 3, 7, 9});
  torch::Tensor rois = torch::tensor({{1.f, 0.f, 0.f, 18.f, 14.f},
                                      {0.f, -3.f, -2.f, 5.f, 4.f},
                                      {1.f, 10.f, 6.f, 24.f, 20.f},
                                      {0.f, 3.3f, 1.7f, 9.1f, 12.9f},
                                      {0.f, 40.f, 40.f, 50.f, 50.f}});
  RoiAlignOptions o;
  o.output_height = 3;
  o.output_width = 4;
  o.spatial_scale = 0.5;
  o.sampling_ratio = 2;
  // Both forms: the separable matrix products and grid_sample.
  for (int64_t limit : {int64_t{1} << 26, int64_t{0}}) {
    o.separable_max_elements = limit;
    for (bool aligned : {true, false}) {
      o.aligned = aligned;
      torch::Tensor out = RoiAlign(features, rois, o);
      ASSERT_EQ(out.sizes(), (std::vector<int64_t>{5, 3, 3, 4}));
      for (int64_t k = 0; k < rois.size(0); ++k) {
        auto r = rois[k];
        torch::Tensor f = features[r[0].item<int64_t>()];
        for (int64_t c = 0; c < 3; ++c) {
          for (int64_t i = 0; i < 3; ++i) {
            for (int64_t j = 0; j < 4; ++j) {
              EXPECT_NEAR(out[k][c][i][j].item<float>(),
                          ReferenceRoiAlign(
                              f, c, r[1].item<float>(), r[2].item<float>(),
                              r[3].item<float>(), r[4].item<float>(), i, j, o),
                          1e-4)
                  << "roi " << k << " aligned " << aligned << " limit "
                  << limit;
            }
          }
        }
      }
      // The last box lies wholly outside the map: every sample reads zero.
      EXPECT_EQ(out[4].abs().sum().item<float>(), 0.0f);
    }
  }
}

TEST(RoiAlign, SeparableAndSampledFormsGiveTheSameGradients) {
  torch::manual_seed(3);
  torch::Tensor base = torch::randn({2, 4, 6, 9});
  torch::Tensor rois = torch::tensor({{0.f, 3.f, 2.f, 60.f, 40.f},
                                      {1.f, -10.f, 5.f, 30.f, 90.f},
                                      {1.f, 100.f, 20.f, 150.f, 100.f},
                                      {0.f, 8.f, 8.f, 24.f, 24.f}});
  RoiAlignOptions o;
  o.spatial_scale = 1.0 / 16;
  torch::Tensor grads[2];
  torch::Tensor outs[2];
  for (int form = 0; form < 2; ++form) {
    o.separable_max_elements = form == 0 ? int64_t{1} << 26 : 0;
    torch::Tensor f = base.clone().requires_grad_(true);
    outs[form] = RoiAlign(f, rois, o);
    (outs[form] * torch::arange(outs[form].numel(), torch::kFloat)
                      .view(outs[form].sizes())
                      .sin())
        .sum()
        .backward();
    grads[form] = f.grad();
  }
  EXPECT_TRUE(torch::allclose(outs[0], outs[1], 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(grads[0], grads[1], 1e-4, 1e-5))
      << (grads[0] - grads[1]).abs().max().item<float>();
  EXPECT_GT(grads[0].abs().sum().item<float>(), 0.0f);
}

TEST(RoiAlign, IsDifferentiableWithRespectToFeatures) {
  torch::Tensor features = torch::randn({1, 2, 8, 8}, torch::requires_grad());
  RoiAlignOptions o;
  o.output_height = 2;
  o.output_width = 2;
  torch::Tensor out =
      RoiAlign(features, torch::tensor({{0.f, 1.f, 1.f, 6.f, 6.f}}), o);
  out.sum().backward();
  ASSERT_TRUE(features.grad().defined());
  // Each of the 8 outputs is a mean of bilinear weights summing to one.
  EXPECT_NEAR(features.grad().sum().item<float>(), 8.0, 1e-4);
}

TEST(RoiAlign, RejectsBadArguments) {
  RoiAlignOptions o;
  EXPECT_THROW(RoiAlign(torch::zeros({1, 1, 4, 4}), torch::zeros({1, 4}), o),
               std::invalid_argument);
  o.sampling_ratio = 0;
  EXPECT_THROW(RoiAlign(torch::zeros({1, 1, 4, 4}), torch::zeros({1, 5}), o),
               std::invalid_argument);
  o.sampling_ratio = 2;
  EXPECT_THROW(RoiAlign(torch::zeros({1, 1, 4, 4}),
                        torch::tensor({{3.f, 0.f, 0.f, 1.f, 1.f}}), o),
               std::invalid_argument);
}

TEST(Anchors, CoverEveryLocationWithEachSizeAndShape) {
  torch::Tensor anchors =
      GenerateAnchors({8, 16}, {0.5, 1, 2}, /*feature_height=*/3,
                      /*feature_width=*/4, /*stride=*/16, torch::kCPU);
  ASSERT_EQ(anchors.sizes(), (std::vector<int64_t>{3 * 4 * 6, 4}));
  torch::Tensor cx = (anchors.select(1, 0) + anchors.select(1, 2)) / 2;
  torch::Tensor cy = (anchors.select(1, 1) + anchors.select(1, 3)) / 2;
  EXPECT_NEAR(cx[0].item<float>(), 8, 1e-5);
  EXPECT_NEAR(cy[5].item<float>(), 8, 1e-5);
  const int64_t row1_col2 = (1 * 4 + 2) * 6;
  EXPECT_NEAR(cx[row1_col2].item<float>(), 40, 1e-5);
  EXPECT_NEAR(cy[row1_col2].item<float>(), 24, 1e-5);
  torch::Tensor w = anchors.select(1, 2) - anchors.select(1, 0);
  torch::Tensor h = anchors.select(1, 3) - anchors.select(1, 1);
  const double sizes[] = {8, 8, 8, 16, 16, 16};
  const double ratios[] = {0.5, 1, 2, 0.5, 1, 2};
  for (int a = 0; a < 6; ++a) {
    EXPECT_NEAR((w[a] * h[a]).item<float>(), sizes[a] * sizes[a], 1e-3);
    EXPECT_NEAR((h[a] / w[a]).item<float>(), ratios[a], 1e-5);
  }
  EXPECT_THROW(GenerateAnchors({8}, {0}, 2, 2, 16, torch::kCPU),
               std::invalid_argument);
}

TEST(MatchBoxes, AppliesThresholdsAndLowQualityMatches) {
  // Two ground truths (rows), four candidates (columns).
  torch::Tensor iou =
      torch::tensor({{0.8f, 0.5f, 0.1f, 0.0f}, {0.1f, 0.6f, 0.2f, 0.35f}});
  EXPECT_EQ(ToVector(MatchBoxes(iou, 4, 0.7, 0.3, false)),
            (std::vector<int64_t>{0, kBetween, kBelowLow, kBetween}));
  // Ground truth 1's best candidate (0.6) is claimed despite being < 0.7.
  EXPECT_EQ(ToVector(MatchBoxes(iou, 4, 0.7, 0.3, true)),
            (std::vector<int64_t>{0, 1, kBelowLow, kBetween}));
  EXPECT_EQ(ToVector(MatchBoxes(torch::zeros({0, 3}), 3, 0.7, 0.3, true)),
            (std::vector<int64_t>{kBelowLow, kBelowLow, kBelowLow}));
}

TEST(BalancedSampler, RespectsTheBudgetAndIsSeeded) {
  torch::Tensor labels = torch::full({100}, -1, torch::kLong);
  labels.narrow(0, 0, 10).fill_(1);
  labels.narrow(0, 10, 60).fill_(0);
  BalancedSampler a(/*batch_size_per_image=*/16, /*positive_fraction=*/0.25,
                    /*seed=*/5);
  auto [pos, neg] = a.Sample(labels);
  EXPECT_EQ(pos.numel(), 4);
  EXPECT_EQ(neg.numel(), 12);
  EXPECT_TRUE((labels.index_select(0, pos) == 1).all().item<bool>());
  EXPECT_TRUE((labels.index_select(0, neg) == 0).all().item<bool>());
  EXPECT_EQ(std::get<0>(at::_unique(neg)).numel(), 12);

  BalancedSampler b(16, 0.25, 5);
  auto [pos_b, neg_b] = b.Sample(labels);
  EXPECT_TRUE(torch::equal(pos, pos_b));
  EXPECT_TRUE(torch::equal(neg, neg_b));

  // Too few positives: the negatives fill the batch.
  BalancedSampler c(/*batch_size_per_image=*/64, 0.5, 1);
  auto [pos_c, neg_c] = c.Sample(labels);
  EXPECT_EQ(pos_c.numel(), 10);
  EXPECT_EQ(neg_c.numel(), 54);
  EXPECT_THROW(BalancedSampler(0, 0.5, 1), std::invalid_argument);
}

}  // namespace
}  // namespace hpcai500::worker::detection
