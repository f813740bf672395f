// hpcai500-train-step-bench: times synthetic training steps with the
// worker's own models, optimiser and precision helpers, the same loops
// bench/peers/train_step.py (ResNet) and bench/peers/detection_step.py
// (Faster R-CNN) run in PyTorch eager, and prints one RESULT line of JSON.
// Warm-up steps are excluded; the reported step time is the median of the
// timed steps.
//
//   hpcai500-train-step-bench --model resnet50 --image-size 224 --batch 16
//       [--small-stem 0|1] [--cuda-graph 0|1] [--fused-bn 0|1]
//       [common flags]
//   hpcai500-train-step-bench --model faster_rcnn_resnet18 --height 96
//       --width 144 --batch 2 [--boxes 3] [--rois N] [--box-head-width N]
//       [--conv-box-head 0|1] [common flags]
//   common flags: [--threads N] [--warmup N] [--steps N]
//       [--precision fp32|bf16|fp16] [--device cpu|cuda] [--channels-last 0|1]
//       [--profile TRACE.json]
//
// Every model kind runs the same set-up and timed step (BenchTrainingStep):
// SGD (lr 0.01, momentum 0.9, weight decay 1e-4), gradients reset to none,
// the worker's autocast and LossScaler for --precision, model and input
// channels-last for --channels-last 1. A kind supplies only its model, its
// input batch and its loss (a Workload).
//
// ResNet: worker/models/resnet.h with cross entropy on random labels;
// --small-stem defaults to 1 for images of 64 pixels or less (the CIFAR stem),
// else 0. --fused-bn 1: the worker's --fused-bn model (ResNetOptions::fused_bn,
// worker/kernels: batch norm + ReLU (+ add) as fused NHWC kernels on CUDA).
// Faster R-CNN (faster_rcnn_resnet{18,34,50,101}): the detector the
// worker trains on a 16-channel grid of --height rows, from
// worker/models/faster_rcnn.h's DetectorOptionsFor (C3 features below 192 rows,
// else C4; anchors scaled by height / 96; --rois and --box-head-width as the
// registry's rois_per_image and box_head_width, 0: Faster R-CNN's 512 and
// 1024), on a random [batch, 16, height, width] batch with --boxes synthetic
// boxes per image (SyntheticTargets, the same boxes as the peer's
// bench_boxes());
// --channels-last defaults to 1 for ResNet, 0 for the detector.
// --cuda-graph 1 (ResNet on CUDA; issue 25) runs the worker's --cuda-graph
// step instead (worker/train/cuda_graph_step.h): the sync-free step with the
// fused SGD, captured once as a CUDA graph after kCudaGraphWarmupSteps eager
// steps and replayed; the capture falls in the warm-up, which must be longer.
// --profile writes a chrome trace (LibTorch's legacy profiler) of one more
// step after the timed ones; bench/profile_summary.py sums it by operator.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/data/ewa_file.h"
#include "worker/models/faster_rcnn.h"
#include "worker/models/resnet.h"
#include "worker/train/cuda_graph_step.h"
#include "worker/train/precision.h"
#include "worker/train/sync_free_step.h"

namespace {

namespace w = ::hpcai500::worker;

struct BenchOptions {
  std::string model = "resnet50";
  int64_t image_size = 224;
  int small_stem = -1;         // -1: by image size
  int fused_bn = 0;            // ResNet: ResNetOptions::fused_bn
  int64_t height = 96;         // detection models
  int64_t width = 144;         // detection models
  int64_t boxes = 3;           // detection models: boxes per image
  int64_t rois = 0;            // detection: 0 for Faster R-CNN's 512
  int64_t box_head_width = 0;  // detection: 0 for Faster R-CNN's 1024
  int conv_box_head = -1;      // -1: FasterRCNNOptions' default
  std::string profile;         // a chrome trace of one more step
  int64_t batch = 16;
  int threads = 0;  // 0: LibTorch's default
  int warmup = 3;
  int steps = 10;
  std::string precision = "fp32";
  std::string device = "cpu";
  int channels_last = -1;  // -1: 1 for ResNet, 0 for detection
  int cuda_graph = 0;      // ResNet on CUDA: the worker's --cuda-graph step
};

int64_t ParseInt(const std::string& flag, const std::string& text, int64_t lo,
                 int64_t hi) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < lo || value > hi) {
    throw std::invalid_argument(
        flag + ": '" + text + "' is not an integer in [" + std::to_string(lo) +
        ", " + std::to_string(hi) + "]");
  }
  return value;
}

bool IsDetection(const std::string& model) {
  return model.rfind("faster_rcnn_", 0) == 0;
}

// Throws if a flag of one model kind is given for the other.
void CheckFlagsFitTheModel(const std::map<std::string, std::string>& flags,
                           bool detection) {
  static const std::set<std::string> kDetectionOnly = {
      "height", "width", "boxes", "rois", "box-head-width", "conv-box-head"};
  static const std::set<std::string> kResNetOnly = {"image-size", "small-stem",
                                                    "cuda-graph", "fused-bn"};
  for (const auto& [name, value] : flags) {
    if (!detection && kDetectionOnly.count(name) > 0) {
      throw std::invalid_argument("--" + name +
                                  " applies to detection models only");
    }
    if (detection && kResNetOnly.count(name) > 0) {
      throw std::invalid_argument("--" + name +
                                  " applies to ResNet models only");
    }
  }
}

BenchOptions ParseFlags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || i + 1 >= argc) {
      throw std::invalid_argument("expected '--flag value', got '" + arg + "'");
    }
    flags[arg.substr(2)] = argv[++i];
  }
  BenchOptions o;
  for (const auto& [name, value] : flags) {
    if (name == "model") {
      o.model = value;
    } else if (name == "image-size") {
      o.image_size = ParseInt("--image-size", value, 8, 4096);
    } else if (name == "small-stem") {
      o.small_stem = static_cast<int>(ParseInt("--small-stem", value, 0, 1));
    } else if (name == "fused-bn") {
      o.fused_bn = static_cast<int>(ParseInt("--fused-bn", value, 0, 1));
    } else if (name == "height") {
      o.height = ParseInt("--height", value, 32, 8192);
    } else if (name == "width") {
      o.width = ParseInt("--width", value, 32, 8192);
    } else if (name == "boxes") {
      o.boxes = ParseInt("--boxes", value, 1, 15);
    } else if (name == "rois") {
      o.rois = ParseInt("--rois", value, 0, 1 << 16);
    } else if (name == "box-head-width") {
      o.box_head_width = ParseInt("--box-head-width", value, 0, 1 << 16);
    } else if (name == "conv-box-head") {
      o.conv_box_head =
          static_cast<int>(ParseInt("--conv-box-head", value, 0, 1));
    } else if (name == "profile") {
      o.profile = value;
    } else if (name == "batch") {
      o.batch = ParseInt("--batch", value, 1, 1 << 16);
    } else if (name == "threads") {
      o.threads = static_cast<int>(ParseInt("--threads", value, 1, 4096));
    } else if (name == "warmup") {
      o.warmup = static_cast<int>(ParseInt("--warmup", value, 0, 100000));
    } else if (name == "steps") {
      o.steps = static_cast<int>(ParseInt("--steps", value, 1, 100000));
    } else if (name == "precision") {
      if (value != "fp32" && value != "bf16" && value != "fp16") {
        throw std::invalid_argument("--precision: '" + value +
                                    "' is not fp32, bf16 or fp16");
      }
      o.precision = value;
    } else if (name == "device") {
      if (value != "cpu" && value != "cuda") {
        throw std::invalid_argument("--device: '" + value +
                                    "' is not cpu or cuda");
      }
      o.device = value;
    } else if (name == "cuda-graph") {
      o.cuda_graph = static_cast<int>(ParseInt("--cuda-graph", value, 0, 1));
    } else if (name == "channels-last") {
      o.channels_last =
          static_cast<int>(ParseInt("--channels-last", value, 0, 1));
    } else {
      throw std::invalid_argument("unknown flag --" + name);
    }
  }
  const bool detection = IsDetection(o.model);
  CheckFlagsFitTheModel(flags, detection);
  // Multiples of 16 are never padded by the peer's GeneralizedRCNNTransform.
  if (detection && (o.height % 16 != 0 || o.width % 16 != 0)) {
    throw std::invalid_argument(
        "--height and --width must be multiples of 16 for a detection model, "
        "got " +
        std::to_string(o.height) + " x " + std::to_string(o.width));
  }
  if (o.channels_last < 0) o.channels_last = detection ? 0 : 1;
  if (o.precision == "fp16" && o.device != "cuda") {
    throw std::invalid_argument("--precision fp16 runs only on --device cuda");
  }
  if (o.cuda_graph == 1 &&
      (o.device != "cuda" || o.warmup <= w::kCudaGraphWarmupSteps)) {
    throw std::invalid_argument(
        "--cuda-graph 1 needs --device cuda and --warmup > " +
        std::to_string(w::kCudaGraphWarmupSteps) +
        " (the capture follows that many eager steps)");
  }
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    throw std::invalid_argument(
        "--device cuda: this LibTorch sees no CUDA device");
  }
  return o;
}

const char* JsonBool(bool value) { return value ? "true" : "false"; }

// What one model kind brings to the shared timed step.
struct Workload {
  std::shared_ptr<torch::nn::Module> model;  // not yet on the device
  torch::Tensor input;                       // on the device, NCHW
  torch::Tensor labels;                      // classification only
  // The training loss of `model` on `input` (runs under autocast).
  std::function<torch::Tensor(const torch::Tensor& input)> loss;
  std::string result_fields;  // JSON members naming the case
};

// ResNet (worker/models/resnet.h) with cross entropy on random labels.
Workload ResNetWorkload(const BenchOptions& o, const torch::Device& device) {
  w::ResNetOptions options;
  options.depth = w::ResNetDepthFromName(o.model);
  options.num_classes = o.image_size <= 64 ? 10 : 1000;
  options.small_input_stem =
      o.small_stem < 0 ? o.image_size <= 64 : o.small_stem == 1;
  options.fused_bn = o.fused_bn == 1;
  w::ResNet model(options);
  torch::Tensor images =
      torch::randn({o.batch, 3, o.image_size, o.image_size}, device);
  torch::Tensor labels = torch::randint(
      options.num_classes, {o.batch},
      torch::TensorOptions().dtype(torch::kInt64).device(device));
  return {model.ptr(), images, labels,
          [net = model.ptr(), labels](const torch::Tensor& x) {
            return torch::nn::functional::cross_entropy(net->forward(x),
                                                        labels);
          },
          "\"image_size\": " + std::to_string(o.image_size) +
              ", \"fused_bn\": " + JsonBool(options.fused_bn)};
}

// The ground truth of the detection bench, identical to bench_boxes() in
// bench/peers/detection_step.py: box i of image b is (14 + 10 i + 6 b) x
// (10 + 8 i + 4 b) pixels at a spread-out centre, class (b + i) % 4.
std::vector<w::DetectionTarget> SyntheticTargets(int64_t batch, int64_t height,
                                                 int64_t width,
                                                 int64_t boxes_per_image,
                                                 int64_t num_classes,
                                                 const torch::Device& device) {
  std::vector<w::DetectionTarget> targets;
  const double h_img = static_cast<double>(height);
  const double w_img = static_cast<double>(width);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<float> rows;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < boxes_per_image; ++i) {
      const double w = std::min(14.0 + 10.0 * i + 6.0 * b, 0.9 * w_img);
      const double h = std::min(10.0 + 8.0 * i + 4.0 * b, 0.9 * h_img);
      const double cx =
          (std::fmod(0.15 + 0.29 * i + 0.07 * b, 0.8) + 0.1) * w_img;
      const double cy =
          (std::fmod(0.25 + 0.31 * i + 0.11 * b, 0.8) + 0.1) * h_img;
      const double x1 = std::min(std::max(cx - w / 2, 0.0), w_img - w);
      const double y1 = std::min(std::max(cy - h / 2, 0.0), h_img - h);
      rows.insert(rows.end(),
                  {static_cast<float>(x1), static_cast<float>(y1),
                   static_cast<float>(x1 + w), static_cast<float>(y1 + h)});
      labels.push_back((b + i) % num_classes);
    }
    targets.push_back({torch::tensor(rows).view({-1, 4}).to(device),
                       torch::tensor(labels, torch::kLong).to(device)});
  }
  return targets;
}

// The worker's detector (DetectorOptionsFor) on the Extreme Weather
// channels, with the sum of its losses on synthetic boxes.
Workload DetectionWorkload(const BenchOptions& o, const torch::Device& device) {
  w::FasterRCNNOptions options = w::DetectorOptionsFor(
      o.model, w::kEwaChannels, /*rows=*/o.height, o.rois, o.box_head_width);
  options.num_classes = w::kEwaNumClasses;
  if (o.conv_box_head >= 0) options.conv_box_head = o.conv_box_head == 1;
  w::FasterRCNN model(options);
  torch::Tensor images =
      torch::randn({o.batch, options.in_channels, o.height, o.width}, device);
  std::vector<w::DetectionTarget> targets = SyntheticTargets(
      o.batch, o.height, o.width, o.boxes, options.num_classes, device);
  return {model.ptr(), images, torch::Tensor(),
          [net = model.ptr(), targets](const torch::Tensor& x) {
            return w::FasterRCNNImpl::TotalLoss(net->Losses(x, targets));
          },
          "\"height\": " + std::to_string(o.height) +
              ", \"width\": " + std::to_string(o.width) +
              ", \"feature_stage\": " + std::to_string(options.feature_stage) +
              ", \"rois_per_image\": " +
              std::to_string(options.box_batch_size_per_image) +
              ", \"box_head_width\": " +
              std::to_string(options.representation_size) +
              ", \"conv_box_head\": " + JsonBool(options.conv_box_head)};
}

// A Workload as the worker's Task, for the --cuda-graph step: its loss reads
// the workload's own labels (the batch's are the same tensor).
class WorkloadTask final : public w::TrainingOnlyTask {
 public:
  WorkloadTask(Workload& work, bool channels_last)
      : work_(work), channels_last_(channels_last) {}
  torch::nn::Module& module() override { return *work_.model; }
  bool channels_last() const override { return channels_last_; }
  torch::Tensor Loss(const w::Batch& batch, w::FlopCount*) override {
    return work_.loss(batch.images);
  }

 private:
  Workload& work_;
  const bool channels_last_;
};

void Synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

struct StepTimes {
  double median = 0;
  double min = 0;
};

// Runs `step` o.warmup times untimed, then o.steps times timed.
template <typename Step>
StepTimes TimeSteps(const BenchOptions& o, const torch::Device& device,
                    Step&& step) {
  for (int i = 0; i < o.warmup; ++i) step();
  Synchronize(device);
  std::vector<double> seconds;
  for (int i = 0; i < o.steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    Synchronize(device);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  const double median =
      n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  return {median, seconds.front()};
}

// Trains `work`'s model on its input with SGD in o's precision and layout,
// times the steps (and profiles one more if asked) and prints the RESULT.
void BenchTrainingStep(const BenchOptions& o, const torch::Device& device,
                       Workload work) {
  torch::nn::Module& model = *work.model;
  model.to(device);
  torch::Tensor input = work.input;
  if (o.channels_last == 1) {
    w::ToChannelsLast(model);
    input = w::ChannelsLastInput(input);
  }
  model.train();
  std::vector<torch::Tensor> params = model.parameters();
  torch::optim::SGD optimizer(
      params, torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
  // --precision was checked when parsed.
  const hpcai500::Precision precision =
      *hpcai500::Parse<hpcai500::Precision>(o.precision);
  w::LossScaler scaler = w::LossScaler::ForPrecision(precision);
  // The worker's step (worker/train/sync_free_step.h): eager, or with
  // --cuda-graph 1 captured after its eager warm-up.
  WorkloadTask task(work, o.channels_last == 1);
  w::SyncFreeStep sync_free(w::StepParts{&task, &optimizer, &scaler,
                                         /*reducer=*/nullptr, precision,
                                         device});
  sync_free.SetLearningRate(0.01);
  std::unique_ptr<w::CudaGraphStep> graph;
  const w::Batch batch{input, work.labels, {}};
  if (o.cuda_graph == 1) {
    graph = std::make_unique<w::CudaGraphStep>(
        &sync_free, nullptr, device,
        w::StaticBatchShape{input.size(0),
                            {input.size(1), input.size(2), input.size(3)},
                            o.channels_last == 1});
  }
  auto step = [&] {
    if (graph) {
      graph->Run(batch, o.batch, o.batch);
    } else {
      sync_free.Step(batch, o.batch, o.batch);
    }
  };
  const StepTimes t = TimeSteps(o, device, step);
  if (!o.profile.empty()) {
    torch::autograd::profiler::RecordProfile guard(o.profile);
    step();
    Synchronize(device);
  }
  std::printf(
      "RESULT {\"impl\": \"hpcai500\", \"model\": \"%s\", %s, \"batch\": "
      "%lld, \"threads\": %d, \"precision\": \"%s\", \"device\": \"%s\", "
      "\"channels_last\": %s, \"cuda_graph\": %s, \"steps\": %d, "
      "\"median_step_s\": %.6f, \"min_step_s\": %.6f, "
      "\"images_per_s\": %.3f}\n",
      o.model.c_str(), work.result_fields.c_str(),
      static_cast<long long>(o.batch), torch::get_num_threads(),
      o.precision.c_str(), o.device.c_str(), JsonBool(o.channels_last == 1),
      JsonBool(o.cuda_graph == 1), o.steps, t.median, t.min,
      static_cast<double>(o.batch) / t.median);
}

int Run(const BenchOptions& o) {
  if (o.threads > 0) torch::set_num_threads(o.threads);
  torch::manual_seed(0);
  const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);
  // Before any tensor is made: all of the run on the stream it captures on.
  if (o.cuda_graph == 1) w::UseCaptureStream(device);
  BenchTrainingStep(o, device,
                    IsDetection(o.model) ? DetectionWorkload(o, device)
                                         : ResNetWorkload(o, device));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(ParseFlags(argc, argv));
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "hpcai500-train-step-bench: %s\n",
                 e.what_without_backtrace());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-train-step-bench: %s\n", e.what());
  }
  return 2;
}
