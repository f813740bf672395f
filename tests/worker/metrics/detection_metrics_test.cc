#include "worker/metrics/detection_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"

namespace hpcai500::worker {
namespace {

using ::hpcai500::testing::ErrorOf;

Detection Det(int64_t image, int64_t label, float score, DetectionBox box) {
  Detection d;
  d.image = image;
  d.label = label;
  d.score = score;
  d.box = box;
  return d;
}

GroundTruth Truth(int64_t image, int64_t label, DetectionBox box) {
  GroundTruth t;
  t.image = image;
  t.label = label;
  t.box = box;
  return t;
}

constexpr DetectionBox kA{0, 0, 10, 10};
constexpr DetectionBox kB{20, 20, 30, 30};
constexpr DetectionBox kFar{50, 50, 60, 60};

TEST(BoxIou, IsIntersectionOverUnion) {
  EXPECT_DOUBLE_EQ(BoxIou(kA, kA), 1.0);
  EXPECT_DOUBLE_EQ(BoxIou(kA, kB), 0.0);
  EXPECT_DOUBLE_EQ(BoxIou(kA, {0, 0, 10, 5}), 0.5);
  EXPECT_DOUBLE_EQ(BoxIou(kA, {5, 5, 15, 15}), 25.0 / 175.0);
  EXPECT_DOUBLE_EQ(BoxIou({0, 0, 0, 0}, {0, 0, 0, 0}), 0.0);
}

TEST(MeanAveragePrecision, NoDetectionsScoreZero) {
  MapResult r = MeanAveragePrecision({}, {Truth(0, 0, kA), Truth(1, 1, kB)},
                                     /*num_classes=*/4);
  EXPECT_EQ(r.classes_present, 2);
  EXPECT_DOUBLE_EQ(r.ap[0], 0.0);
  EXPECT_DOUBLE_EQ(r.ap[1], 0.0);
  EXPECT_DOUBLE_EQ(r.map, 0.0);
}

TEST(MeanAveragePrecision, PerfectDetectionsScoreOne) {
  std::vector<GroundTruth> truths = {Truth(0, 0, kA), Truth(0, 1, kB),
                                     Truth(1, 3, kA)};
  std::vector<Detection> dets = {Det(0, 0, 0.9f, kA), Det(0, 1, 0.4f, kB),
                                 Det(1, 3, 0.7f, kA)};
  MapResult r = MeanAveragePrecision(dets, truths, 4);
  EXPECT_EQ(r.classes_present, 3);
  EXPECT_DOUBLE_EQ(r.map, 1.0);
  EXPECT_TRUE(std::isnan(r.ap[2]));
}

TEST(MeanAveragePrecision, DuplicateOfAMatchedTruthIsAFalsePositive) {
  // TP (A, image 0), duplicate of A (FP), TP (A, image 1):
  // recall .5 .5 1, precision 1 .5 2/3, envelope 1 2/3 2/3
  // -> AP = .5 * 1 + .5 * 2/3.
  std::vector<GroundTruth> truths = {Truth(0, 0, kA), Truth(1, 0, kA)};
  std::vector<Detection> dets = {
      Det(0, 0, 0.9f, kA), Det(0, 0, 0.8f, {0, 0, 10, 9}), Det(1, 0, 0.7f, kA)};
  MapResult r = MeanAveragePrecision(dets, truths, 1);
  EXPECT_NEAR(r.ap[0], 0.5 + 0.5 * 2.0 / 3.0, 1e-12);
}

TEST(MeanAveragePrecision, ClassWithoutTruthIsExcludedAndItsDetectionsIgnored) {
  std::vector<GroundTruth> truths = {Truth(0, 0, kA)};
  std::vector<Detection> dets = {Det(0, 0, 0.5f, kA), Det(0, 1, 0.99f, kA),
                                 Det(0, 1, 0.98f, kB)};
  MapResult r = MeanAveragePrecision(dets, truths, 4);
  EXPECT_EQ(r.classes_present, 1);
  EXPECT_TRUE(std::isnan(r.ap[1]));
  EXPECT_DOUBLE_EQ(r.map, 1.0);
}

TEST(MeanAveragePrecision, MixedCaseMatchesHandComputation) {
  // Class 0: truths A, B in image 0 and A in image 1. Detections by score:
  // TP (A/0), FP (far box, image 1), FP (duplicate A/0), TP (A/1).
  // recall 1/3 1/3 1/3 2/3; precision 1 1/2 1/3 1/2; envelope 1 1/2 1/2 1/2
  // AP0 = 1/3 * 1 + 1/3 * 1/2 = 1/2.
  // Class 1: truths A, B in image 2. TP (A), FP (far), TP (B):
  // AP1 = 1/2 * 1 + 1/2 * 2/3 = 5/6.
  // Class 2 has detections only; class 3 nothing. mAP = (1/2 + 5/6) / 2.
  std::vector<GroundTruth> truths = {Truth(0, 0, kA), Truth(0, 0, kB),
                                     Truth(1, 0, kA), Truth(2, 1, kA),
                                     Truth(2, 1, kB)};
  std::vector<Detection> dets = {Det(1, 0, 0.6f, kA),   Det(0, 0, 0.9f, kA),
                                 Det(1, 0, 0.8f, kFar), Det(0, 0, 0.7f, kA),
                                 Det(2, 1, 0.9f, kA),   Det(2, 1, 0.8f, kFar),
                                 Det(2, 1, 0.7f, kB),   Det(2, 2, 0.9f, kA)};
  MapResult r = MeanAveragePrecision(dets, truths, 4);
  EXPECT_NEAR(r.ap[0], 0.5, 1e-12);
  EXPECT_NEAR(r.ap[1], 5.0 / 6.0, 1e-12);
  EXPECT_EQ(r.classes_present, 2);
  EXPECT_NEAR(r.map, 2.0 / 3.0, 1e-12);
}

TEST(MeanAveragePrecision, IouExactlyAtThresholdMatches) {
  std::vector<GroundTruth> truths = {Truth(0, 0, kA)};
  EXPECT_DOUBLE_EQ(
      MeanAveragePrecision({Det(0, 0, 1.f, {0, 0, 10, 5})}, truths, 1).map,
      1.0);
  EXPECT_DOUBLE_EQ(
      MeanAveragePrecision({Det(0, 0, 1.f, {0, 0, 10, 4.9f})}, truths, 1).map,
      0.0);
}

TEST(MeanAveragePrecision, DetectionInAnotherImageDoesNotMatch) {
  MapResult r =
      MeanAveragePrecision({Det(1, 0, 1.f, kA)}, {Truth(0, 0, kA)}, 1);
  EXPECT_DOUBLE_EQ(r.map, 0.0);
}

TEST(MeanAveragePrecision, RejectsBadLabelsAndThresholds) {
  EXPECT_THROW(MeanAveragePrecision({Det(0, 4, 1.f, kA)}, {}, 4),
               std::invalid_argument);
  EXPECT_THROW(MeanAveragePrecision({}, {Truth(0, -1, kA)}, 4),
               std::invalid_argument);
  EXPECT_THROW(MeanAveragePrecision({}, {}, 4, 0.0), std::invalid_argument);
}

// Model-format boxes (x1, y1, x2, y2 rows) as a [K, 4] tensor.
torch::Tensor Boxes(std::vector<float> xyxy) {
  return torch::tensor(xyxy).reshape({-1, 4});
}

torch::Tensor Labels(std::vector<int64_t> labels) {
  return torch::tensor(labels, torch::kLong);
}

TEST(DetectionEvaluator, ScoresTensorsImageByImage) {
  DetectionEvaluator eval(/*num_classes=*/2);
  // Image 0: one truth of class 0 found; image 1: truth of class 1 missed
  // (the detection is in the wrong place) -> AP0 1, AP1 0.
  eval.AddImage(/*image=*/0, Boxes({0, 0, 10, 10}), torch::tensor({0.9f}),
                Labels({0}), Boxes({0, 0, 10, 10}), Labels({0}));
  eval.AddImage(/*image=*/1, Boxes({50, 50, 60, 60}), torch::tensor({0.9f}),
                Labels({1}), Boxes({0, 0, 10, 10}), Labels({1}));
  EXPECT_EQ(eval.images(), 2);
  MapResult r = eval.Compute();
  EXPECT_DOUBLE_EQ(r.ap[0], 1.0);
  EXPECT_DOUBLE_EQ(r.ap[1], 0.0);
  EXPECT_DOUBLE_EQ(r.map, 0.5);
  EXPECT_THROW(
      eval.AddImage(2, Boxes({0, 0, 1, 1}), torch::tensor({0.1f, 0.2f}),
                    Labels({0}), Boxes({}), Labels({})),
      std::invalid_argument);
}

TEST(DetectionEvaluator, TakesModelBoxesAsX1Y1X2Y2) {
  DetectionEvaluator eval(/*num_classes=*/1);
  // x from 0 to 20, y from 0 to 10.
  eval.AddImage(0, Boxes({0, 0, 20, 10}), torch::tensor({0.9f}), Labels({0}),
                Boxes({0, 0, 20, 10}), Labels({0}));
  const std::vector<double> rows = eval.Rows();
  ASSERT_EQ(rows.size(), size_t{2 * DetectionEvaluator::kRowWidth});
  // image, label, kind, score, then ymin, xmin, ymax, xmax.
  const std::vector<double> detection(
      rows.begin(), rows.begin() + DetectionEvaluator::kRowWidth);
  EXPECT_EQ(detection, (std::vector<double>{0, 0, 0, 0.9f, 0, 0, 10, 20}));
  const std::vector<double> truth(rows.begin() + DetectionEvaluator::kRowWidth,
                                  rows.end());
  EXPECT_EQ(truth, (std::vector<double>{0, 0, 1, 0, 0, 0, 10, 20}));
}

// Three images of two classes with hits, misses and a duplicate; `first`
// and `end` pick which of them go to `eval`, as one rank's share.
void AddScene(DetectionEvaluator& eval, int first, int end) {
  struct Image {
    std::vector<float> boxes, scores;
    std::vector<int64_t> labels;
    std::vector<float> truth_boxes;
    std::vector<int64_t> truth_labels;
  };
  const std::vector<Image> images = {
      {{0, 0, 10, 10, 0, 0, 10, 9, 50, 50, 60, 60},
       {0.9f, 0.8f, 0.3f},
       {0, 0, 1},
       {0, 0, 10, 10, 20, 20, 30, 30},
       {0, 0}},
      {{20, 20, 30, 30, 0, 0, 10, 10},
       {0.7f, 0.6f},
       {1, 0},
       {20, 20, 30, 30, 0, 0, 10, 10},
       {1, 0}},
      {{}, {}, {}, {40, 0, 50, 10}, {1}},
  };
  for (int i = first; i < end; ++i) {
    const Image& im = images[i];
    eval.AddImage(i, Boxes(im.boxes), torch::tensor(im.scores),
                  Labels(im.labels), Boxes(im.truth_boxes),
                  Labels(im.truth_labels));
  }
}

TEST(DetectionEvaluator, RowsRoundTripToTheSameScore) {
  DetectionEvaluator direct(/*num_classes=*/2);
  AddScene(direct, 0, 3);
  const std::vector<double> rows = direct.Rows();
  DetectionEvaluator copy(/*num_classes=*/2);
  copy.AddRows(rows.data(), static_cast<int64_t>(rows.size()));
  EXPECT_EQ(copy.Rows(), rows);
  const MapResult a = direct.Compute(), b = copy.Compute();
  EXPECT_GT(a.map, 0.0);
  EXPECT_LT(a.map, 1.0);
  EXPECT_DOUBLE_EQ(b.map, a.map);
  EXPECT_DOUBLE_EQ(b.ap[0], a.ap[0]);
  EXPECT_DOUBLE_EQ(b.ap[1], a.ap[1]);
}

TEST(DetectionEvaluator, TwoRanksMergedScoreAsOneOverAllImages) {
  DetectionEvaluator all(/*num_classes=*/2);
  AddScene(all, 0, 3);
  DetectionEvaluator rank0(2), rank1(2);
  AddScene(rank0, 0, 1);
  AddScene(rank1, 1, 3);
  std::vector<double> gathered = rank1.Rows();  // any order of ranks
  const std::vector<double> rows0 = rank0.Rows();
  gathered.insert(gathered.end(), rows0.begin(), rows0.end());
  DetectionEvaluator merged(/*num_classes=*/2);
  merged.AddRows(gathered.data(), static_cast<int64_t>(gathered.size()));

  const MapResult expected = all.Compute(), got = merged.Compute();
  // Class 0: truths A, B (image 0) and A (image 1); detections by score:
  // TP, FP (duplicate), TP -> AP 1/3 + 1/3 * 2/3. Class 1: truths in
  // images 1 and 2; TP (image 1), FP (far, image 0) -> AP 1/2.
  EXPECT_NEAR(expected.ap[0], 1.0 / 3 + 2.0 / 9, 1e-12);
  EXPECT_NEAR(expected.ap[1], 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(got.ap[0], expected.ap[0]);
  EXPECT_DOUBLE_EQ(got.ap[1], expected.ap[1]);
  EXPECT_DOUBLE_EQ(got.map, expected.map);
}

TEST(DetectionEvaluator, RejectsMalformedRows) {
  DetectionEvaluator eval(/*num_classes=*/2);
  const std::vector<double> rows = {0, 0, 0, 0.5, 0, 0, 10, 10, 0};
  EXPECT_THROW(eval.AddRows(rows.data(), 9), std::invalid_argument);
  EXPECT_NE(ErrorOf([&] {
              eval.AddRows(rows.data(), 9);
            }).find("9 row values are not a whole number of rows of 8"),
            std::string::npos);
  const std::vector<double> bad_kind = {0, 0, 0, 0.5, 0, 0, 10, 10,  // fine
                                        1, 0, 2, 0.5, 0, 0, 10, 10};
  EXPECT_THROW(eval.AddRows(bad_kind.data(), 16), std::invalid_argument);
  EXPECT_NE(ErrorOf([&] {
              eval.AddRows(bad_kind.data(), 16);
            }).find("row 1 has kind 2"),
            std::string::npos);
  EXPECT_TRUE(eval.Rows().empty());  // nothing added
}

}  // namespace
}  // namespace hpcai500::worker
