#include "worker/metrics/detection_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

namespace hpcai500::worker {
namespace {

void CheckLabel(int64_t label, int64_t num_classes, const char* what) {
  if (label < 0 || label >= num_classes) {
    throw std::invalid_argument(std::string("mAP: ") + what + " label " +
                                std::to_string(label) + " outside [0, " +
                                std::to_string(num_classes) + ")");
  }
}

// All-point interpolated AP of one class, given its detections in
// descending score order marked true/false positive.
double AveragePrecision(const std::vector<bool>& true_positive,
                        int64_t num_truths) {
  const size_t n = true_positive.size();
  std::vector<double> recall(n), precision(n);
  double tp = 0;
  for (size_t i = 0; i < n; ++i) {
    tp += true_positive[i] ? 1 : 0;
    recall[i] = tp / num_truths;
    precision[i] = tp / static_cast<double>(i + 1);
  }
  // Envelope: precision at recall r is the best precision at any recall >= r.
  for (size_t i = n; i-- > 1;) {
    precision[i - 1] = std::max(precision[i - 1], precision[i]);
  }
  double ap = 0, previous_recall = 0;
  for (size_t i = 0; i < n; ++i) {
    ap += (recall[i] - previous_recall) * precision[i];
    previous_recall = recall[i];
  }
  return ap;
}

// Row kinds of DetectionEvaluator::Rows().
constexpr double kDetectionRow = 0;
constexpr double kTruthRow = 1;

// The one conversion from the model's x1, y1, x2, y2 (xmin, ymin, xmax,
// ymax) to a DetectionBox (ymin, xmin, ymax, xmax).
DetectionBox FromCorners(const float* xyxy) {
  return {xyxy[1], xyxy[0], xyxy[3], xyxy[2]};
}

}  // namespace

double BoxIou(const DetectionBox& a, const DetectionBox& b) {
  const double ih = std::min(a[2], b[2]) - std::max(a[0], b[0]);
  const double iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
  const double inter = ih > 0 && iw > 0 ? ih * iw : 0.0;
  const double area_a =
      std::max(0.0, double(a[2]) - a[0]) * std::max(0.0, double(a[3]) - a[1]);
  const double area_b =
      std::max(0.0, double(b[2]) - b[0]) * std::max(0.0, double(b[3]) - b[1]);
  const double uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.0;
}

MapResult MeanAveragePrecision(const std::vector<Detection>& detections,
                               const std::vector<GroundTruth>& truths,
                               int64_t num_classes, double iou_threshold) {
  if (num_classes <= 0) {
    throw std::invalid_argument("mAP: num_classes must be positive");
  }
  if (!(iou_threshold > 0 && iou_threshold <= 1)) {
    throw std::invalid_argument("mAP: IoU threshold must be in (0, 1]");
  }
  for (const Detection& d : detections)
    CheckLabel(d.label, num_classes, "detection");
  for (const GroundTruth& t : truths)
    CheckLabel(t.label, num_classes, "ground truth");

  MapResult result;
  result.ap.assign(num_classes, std::numeric_limits<double>::quiet_NaN());
  double sum = 0;
  for (int64_t cls = 0; cls < num_classes; ++cls) {
    // Ground truth of this class by image, with a taken flag each.
    std::map<int64_t, std::vector<size_t>> truth_by_image;
    int64_t num_truths = 0;
    for (size_t i = 0; i < truths.size(); ++i) {
      if (truths[i].label != cls) continue;
      truth_by_image[truths[i].image].push_back(i);
      ++num_truths;
    }
    if (num_truths == 0) continue;  // excluded from the mean
    std::vector<size_t> order;
    for (size_t i = 0; i < detections.size(); ++i) {
      if (detections[i].label == cls) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return detections[a].score > detections[b].score;
    });
    std::vector<bool> taken(truths.size(), false);
    std::vector<bool> true_positive;
    true_positive.reserve(order.size());
    for (size_t di : order) {
      const Detection& d = detections[di];
      double best_iou = -1;
      size_t best = 0;
      auto it = truth_by_image.find(d.image);
      if (it != truth_by_image.end()) {
        for (size_t ti : it->second) {
          const double iou = BoxIou(d.box, truths[ti].box);
          if (iou > best_iou) {
            best_iou = iou;
            best = ti;
          }
        }
      }
      const bool match = best_iou >= iou_threshold && !taken[best];
      if (match) taken[best] = true;
      true_positive.push_back(match);
    }
    result.ap[cls] = AveragePrecision(true_positive, num_truths);
    sum += result.ap[cls];
    ++result.classes_present;
  }
  result.map = result.classes_present > 0 ? sum / result.classes_present : 0.0;
  return result;
}

void DetectionEvaluator::AddImage(int64_t image, const torch::Tensor& boxes,
                                  const torch::Tensor& scores,
                                  const torch::Tensor& labels,
                                  const torch::Tensor& truth_boxes,
                                  const torch::Tensor& truth_labels) {
  auto as_boxes = [](const torch::Tensor& t, const char* what) {
    if (t.dim() != 2 || t.size(1) != 4) {
      throw std::invalid_argument(std::string("DetectionEvaluator: ") + what +
                                  " must be [K, 4]");
    }
    return t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  };
  const torch::Tensor b = as_boxes(boxes, "boxes");
  const torch::Tensor tb = as_boxes(truth_boxes, "truth boxes");
  const torch::Tensor s =
      scores.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const torch::Tensor l =
      labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  const torch::Tensor tl =
      truth_labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  if (s.dim() != 1 || l.dim() != 1 || s.size(0) != b.size(0) ||
      l.size(0) != b.size(0) || tl.dim() != 1 || tl.size(0) != tb.size(0)) {
    throw std::invalid_argument(
        "DetectionEvaluator: scores and labels must be [K] matching boxes, "
        "truth labels [G] matching truth boxes");
  }
  ++images_;
  const float* box = b.data_ptr<float>();
  const float* score = s.data_ptr<float>();
  const int64_t* label = l.data_ptr<int64_t>();
  for (int64_t k = 0; k < b.size(0); ++k) {
    detections_.push_back(
        {image, label[k], score[k], FromCorners(box + 4 * k)});
  }
  const float* truth_box = tb.data_ptr<float>();
  const int64_t* truth_label = tl.data_ptr<int64_t>();
  for (int64_t k = 0; k < tb.size(0); ++k) {
    truths_.push_back({image, truth_label[k], FromCorners(truth_box + 4 * k)});
  }
}

std::vector<double> DetectionEvaluator::Rows() const {
  std::vector<double> rows;
  rows.reserve((detections_.size() + truths_.size()) * kRowWidth);
  auto append = [&rows](int64_t image, int64_t label, double kind, double score,
                        const DetectionBox& box) {
    rows.insert(rows.end(),
                {static_cast<double>(image), static_cast<double>(label), kind,
                 score, box[0], box[1], box[2], box[3]});
  };
  for (const Detection& d : detections_) {
    append(d.image, d.label, kDetectionRow, d.score, d.box);
  }
  for (const GroundTruth& t : truths_) {
    append(t.image, t.label, kTruthRow, 0.0, t.box);
  }
  return rows;
}

void DetectionEvaluator::AddRows(const double* rows, int64_t count) {
  if (count < 0 || count % kRowWidth != 0) {
    throw std::invalid_argument(
        "DetectionEvaluator: " + std::to_string(count) +
        " row values are not a whole number of rows of " +
        std::to_string(kRowWidth));
  }
  const int64_t n = count / kRowWidth;
  for (int64_t i = 0; i < n; ++i) {  // all or nothing
    const double kind = rows[i * kRowWidth + 2];
    if (kind != kDetectionRow && kind != kTruthRow) {
      std::ostringstream message;
      message << "DetectionEvaluator: row " << i << " has kind " << kind
              << ", neither 0 (detection) nor 1 (ground truth)";
      throw std::invalid_argument(message.str());
    }
  }
  for (const double* r = rows; r != rows + count; r += kRowWidth) {
    const auto image = static_cast<int64_t>(r[0]);
    const auto label = static_cast<int64_t>(r[1]);
    const DetectionBox box = {
        static_cast<float>(r[4]), static_cast<float>(r[5]),
        static_cast<float>(r[6]), static_cast<float>(r[7])};
    if (r[2] == kTruthRow) {
      truths_.push_back({image, label, box});
    } else {
      detections_.push_back({image, label, static_cast<float>(r[3]), box});
    }
  }
}

MapResult DetectionEvaluator::Compute() const {
  return MeanAveragePrecision(detections_, truths_, num_classes_,
                              iou_threshold_);
}

}  // namespace hpcai500::worker
