#include "worker/detection_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
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

void DetectionEvaluator::AddImage(const torch::Tensor& boxes,
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
  torch::Tensor b = as_boxes(boxes, "boxes");
  torch::Tensor tb = as_boxes(truth_boxes, "truth boxes");
  torch::Tensor s = scores.detach().to(torch::kCPU, torch::kFloat).contiguous();
  torch::Tensor l = labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  torch::Tensor tl =
      truth_labels.detach().to(torch::kCPU, torch::kLong).contiguous();
  if (s.dim() != 1 || l.dim() != 1 || s.size(0) != b.size(0) ||
      l.size(0) != b.size(0) || tl.dim() != 1 || tl.size(0) != tb.size(0)) {
    throw std::invalid_argument(
        "DetectionEvaluator: scores and labels must be [K] matching boxes, "
        "truth labels [G] matching truth boxes");
  }
  const int64_t image = images_++;
  const float* bp = b.data_ptr<float>();
  for (int64_t k = 0; k < b.size(0); ++k) {
    Detection d;
    d.image = image;
    d.label = l[k].item<int64_t>();
    d.score = s[k].item<float>();
    std::copy(bp + 4 * k, bp + 4 * k + 4, d.box.begin());
    detections_.push_back(d);
  }
  const float* tp = tb.data_ptr<float>();
  for (int64_t k = 0; k < tb.size(0); ++k) {
    GroundTruth t;
    t.image = image;
    t.label = tl[k].item<int64_t>();
    std::copy(tp + 4 * k, tp + 4 * k + 4, t.box.begin());
    truths_.push_back(t);
  }
}

MapResult DetectionEvaluator::Compute() const {
  return MeanAveragePrecision(detections_, truths_, num_classes_,
                              iou_threshold_);
}

}  // namespace hpcai500::worker
