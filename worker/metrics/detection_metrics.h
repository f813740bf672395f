// Mean average precision for object detection, as HPC AI500 scores Extreme
// Weather Analytics: mAP at IoU 0.5 with all-point interpolated AP (PASCAL
// VOC 2010+): per class, detections are matched greedily by descending score,
// each ground truth box at most once (later matches of a taken box are false
// positives), the precision envelope is integrated over recall, and the mean
// runs over the classes that have ground truth. Detections of a class with no
// ground truth are ignored.
//
// Boxes are [ymin, xmin, ymax, xmax] in continuous pixel coordinates; area is
// (ymax - ymin) * (xmax - xmin). A detection matches when IoU >= threshold
// (an IoU exactly at the threshold counts, as in COCO).
#ifndef HPCAI500_WORKER_METRICS_DETECTION_METRICS_H_
#define HPCAI500_WORKER_METRICS_DETECTION_METRICS_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

namespace hpcai500::worker {

using DetectionBox = std::array<float, 4>;  // ymin, xmin, ymax, xmax

struct Detection {
  int64_t image = 0;
  int64_t label = 0;
  float score = 0;
  DetectionBox box{};
};

struct GroundTruth {
  int64_t image = 0;
  int64_t label = 0;
  DetectionBox box{};
};

struct MapResult {
  // Mean of ap over classes with ground truth; 0 when no class has any.
  double map = 0;
  // Per class in [0, num_classes); NaN for a class without ground truth.
  std::vector<double> ap;
  int64_t classes_present = 0;
};

// Intersection over union; 0 when the union is empty.
double BoxIou(const DetectionBox& a, const DetectionBox& b);

// mAP over `detections` and `truths` for labels in [0, num_classes).
// Throws std::invalid_argument for a label outside that range, a
// non-positive num_classes or a threshold outside (0, 1].
MapResult MeanAveragePrecision(const std::vector<Detection>& detections,
                               const std::vector<GroundTruth>& truths,
                               int64_t num_classes, double iou_threshold = 0.5);

// Collects a model's outputs image by image and scores them at the end.
// Ranks that each saw part of the images score them together through rows:
// every rank's Rows() gathered into one evaluator's AddRows score as one
// evaluator that saw every image would (detections of equal score rank in
// the order their rows arrive). Not thread-safe.
class DetectionEvaluator {
 public:
  // Values per row of Rows() and AddRows(), one row per box: image, label,
  // kind (0 detection, 1 ground truth), score (0 for ground truth), then
  // the box as ymin, xmin, ymax, xmax (a DetectionBox).
  static constexpr int64_t kRowWidth = 8;

  explicit DetectionEvaluator(int64_t num_classes, double iou_threshold = 0.5)
      : num_classes_(num_classes), iou_threshold_(iou_threshold) {}

  // One image with id `image`, which must be unique among all images scored
  // together (across ranks too). Boxes come as the model gives them
  // (worker/faster_rcnn.h): x1, y1, x2, y2 pixels, i.e. xmin, ymin, xmax,
  // ymax. Predictions: boxes [K, 4] float, scores [K], labels [K] int64;
  // ground truth: truth_boxes [G, 4] float, truth_labels [G] int64 (CPU or
  // CUDA; copied). Throws std::invalid_argument for mismatched shapes.
  void AddImage(int64_t image, const torch::Tensor& boxes,
                const torch::Tensor& scores, const torch::Tensor& labels,
                const torch::Tensor& truth_boxes,
                const torch::Tensor& truth_labels);
  // Images added with AddImage (rows merged with AddRows do not count).
  int64_t images() const { return images_; }

  // Every box collected so far (added or merged) as kRowWidth values each:
  // detections first, then ground truth, each in the order added.
  std::vector<double> Rows() const;
  // Adds the boxes of `count` values at `rows` (borrowed for the call), laid
  // out as Rows() gives them. Throws std::invalid_argument when count is not
  // a multiple of kRowWidth or a row's kind is neither 0 nor 1, adding
  // nothing then; labels are checked by Compute().
  void AddRows(const double* rows, int64_t count);

  // Throws std::invalid_argument as MeanAveragePrecision does.
  MapResult Compute() const;

 private:
  // Constant after construction.
  int64_t num_classes_;
  double iou_threshold_;
  // Accumulated.
  int64_t images_ = 0;
  std::vector<Detection> detections_;
  std::vector<GroundTruth> truths_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_METRICS_DETECTION_METRICS_H_
