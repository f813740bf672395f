#include "worker/detection_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace hpcai500::worker {
namespace {

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

TEST(DetectionEvaluator, ScoresTensorsImageByImage) {
  DetectionEvaluator eval(/*num_classes=*/2);
  auto boxes = [](std::vector<float> v) {
    return torch::tensor(v).reshape({-1, 4});
  };
  // Image 0: one truth of class 0 found; image 1: truth of class 1 missed
  // (the detection is in the wrong place) -> AP0 1, AP1 0.
  eval.AddImage(boxes({0, 0, 10, 10}), torch::tensor({0.9f}),
                torch::tensor({int64_t{0}}), boxes({0, 0, 10, 10}),
                torch::tensor({int64_t{0}}));
  eval.AddImage(boxes({50, 50, 60, 60}), torch::tensor({0.9f}),
                torch::tensor({int64_t{1}}), boxes({0, 0, 10, 10}),
                torch::tensor({int64_t{1}}));
  EXPECT_EQ(eval.images(), 2);
  MapResult r = eval.Compute();
  EXPECT_DOUBLE_EQ(r.ap[0], 1.0);
  EXPECT_DOUBLE_EQ(r.ap[1], 0.0);
  EXPECT_DOUBLE_EQ(r.map, 0.5);
  EXPECT_THROW(eval.AddImage(boxes({0, 0, 1, 1}), torch::tensor({0.1f, 0.2f}),
                             torch::tensor({int64_t{0}}), boxes({}),
                             torch::empty({0}, torch::kLong)),
               std::invalid_argument);
}

}  // namespace
}  // namespace hpcai500::worker
