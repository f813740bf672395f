// hpcai500-train-step-bench: times synthetic training steps with the
// worker's own models, optimiser and precision helpers, the same loops
// bench/peers/train_step.py (ResNet) and bench/peers/detection_step.py
// (Faster R-CNN) run in PyTorch eager, and prints one RESULT line of JSON.
// Warm-up steps are excluded; the reported step time is the median of the
// timed steps.
//
//   hpcai500-train-step-bench --model resnet50 --image-size 224 --batch 16
//       [--threads N] [--warmup N] [--steps N] [--precision fp32|bf16]
//       [--device cpu|cuda] [--channels-last 0|1] [--small-stem 0|1]
//   hpcai500-train-step-bench --model faster_rcnn_resnet18 --height 96
//       --width 144 --batch 2 [--boxes 3] [--conv-box-head 0|1]
//       [--profile TRACE.json] [...]
//
// --small-stem defaults to 1 for images of 64 pixels or less (the CIFAR
// stem of worker/resnet.h), else 0. The faster_rcnn_resnet{18,34,50,101}
// models are worker/faster_rcnn.h with its default FasterRCNNOptions (16
// input channels, C4 features) on a random [batch, 16, height, width] batch
// with --boxes synthetic boxes per image (SyntheticTargets, the same boxes as
// the peer's bench_boxes()); --channels-last defaults to 0 for them.
// --profile writes a chrome trace (LibTorch's legacy profiler) of one more
// step after the timed ones; bench/profile_summary.py sums it by operator.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/faster_rcnn.h"
#include "worker/precision.h"
#include "worker/resnet.h"

namespace {

struct BenchOptions {
  std::string model = "resnet50";
  int64_t image_size = 224;
  int64_t height = 96;     // detection models
  int64_t width = 144;     // detection models
  int64_t boxes = 3;       // detection models: boxes per image
  int conv_box_head = -1;  // -1: FasterRCNNOptions' default
  std::string profile;     // detection: a chrome trace of one more step
  int64_t batch = 16;
  int threads = 0;  // 0: LibTorch's default
  int warmup = 3;
  int steps = 10;
  std::string precision = "fp32";
  std::string device = "cpu";
  int channels_last = -1;  // -1: 1 for ResNet, 0 for detection
  int small_stem = -1;     // -1: by image size
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
    } else if (name == "height") {
      o.height = ParseInt("--height", value, 32, 8192);
    } else if (name == "width") {
      o.width = ParseInt("--width", value, 32, 8192);
    } else if (name == "boxes") {
      o.boxes = ParseInt("--boxes", value, 1, 15);
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
    } else if (name == "channels-last") {
      o.channels_last =
          static_cast<int>(ParseInt("--channels-last", value, 0, 1));
    } else if (name == "small-stem") {
      o.small_stem = static_cast<int>(ParseInt("--small-stem", value, 0, 1));
    } else {
      throw std::invalid_argument("unknown flag --" + name);
    }
  }
  if (IsDetection(o.model)) {
    if (o.height % 16 != 0 || o.width % 16 != 0) {
      throw std::invalid_argument(
          "--height and --width must be multiples of 16 (the C4 stride) for "
          "a detection model, got " +
          std::to_string(o.height) + " x " + std::to_string(o.width));
    }
    if (o.channels_last < 0) o.channels_last = 0;
  } else if (o.conv_box_head >= 0) {
    throw std::invalid_argument("--conv-box-head applies to detection models");
  }
  if (o.channels_last < 0) o.channels_last = 1;
  if (o.precision == "fp16" && o.device != "cuda") {
    throw std::invalid_argument("--precision fp16 runs only on --device cuda");
  }
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    throw std::invalid_argument(
        "--device cuda: this LibTorch sees no CUDA device");
  }
  return o;
}

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

// The ground truth of the detection bench, identical to bench_boxes() in
// bench/peers/detection_step.py: box i of image b is (14 + 10 i + 6 b) x
// (10 + 8 i + 4 b) pixels at a spread-out centre, class (b + i) % 4.
std::vector<hpcai500::worker::DetectionTarget> SyntheticTargets(
    int64_t batch, int64_t height, int64_t width, int64_t boxes_per_image,
    int64_t num_classes, const torch::Device& device) {
  std::vector<hpcai500::worker::DetectionTarget> targets;
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

int RunDetection(const BenchOptions& o) {
  namespace w = hpcai500::worker;
  if (o.threads > 0) torch::set_num_threads(o.threads);
  torch::manual_seed(0);
  const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);

  w::FasterRCNNOptions model_options;
  model_options.backbone_depth = w::ResNetDepthFromName(
      o.model.substr(std::string("faster_rcnn_").size()));
  if (o.conv_box_head >= 0) model_options.conv_box_head = o.conv_box_head == 1;
  w::FasterRCNN model(model_options);
  model->to(device);
  if (o.channels_last == 1) w::ToChannelsLast(*model);
  model->train();

  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
  std::vector<torch::Tensor> params = model->parameters();
  w::LossScaler scaler = w::LossScaler::ForPrecision(o.precision);
  torch::Tensor images = torch::randn(
      {o.batch, model_options.in_channels, o.height, o.width}, device);
  if (o.channels_last == 1) images = w::ChannelsLastInput(images);
  const std::vector<w::DetectionTarget> targets = SyntheticTargets(
      o.batch, o.height, o.width, o.boxes, model_options.num_classes, device);

  auto step = [&] {
    for (torch::Tensor& p : params) p.mutable_grad().reset();
    torch::Tensor loss;
    {
      w::AutocastScope autocast(o.precision, device);
      loss = w::FasterRCNNImpl::TotalLoss(model->Losses(images, targets));
    }
    scaler.Scale(loss).backward();
    scaler.Step(optimizer, params);
  };
  const StepTimes t = TimeSteps(o, device, step);
  if (!o.profile.empty()) {
    torch::autograd::profiler::RecordProfile guard(o.profile);
    step();
    Synchronize(device);
  }
  std::printf(
      "RESULT {\"impl\": \"hpcai500\", \"model\": \"%s\", \"height\": "
      "%lld, \"width\": %lld, \"batch\": %lld, \"threads\": %d, "
      "\"precision\": \"%s\", \"device\": \"%s\", \"channels_last\": %s, "
      "\"conv_box_head\": %s, \"steps\": %d, \"median_step_s\": %.6f, "
      "\"min_step_s\": %.6f, \"images_per_s\": %.3f}\n",
      o.model.c_str(), static_cast<long long>(o.height),
      static_cast<long long>(o.width), static_cast<long long>(o.batch),
      torch::get_num_threads(), o.precision.c_str(), o.device.c_str(),
      o.channels_last == 1 ? "true" : "false",
      model_options.conv_box_head ? "true" : "false", o.steps, t.median, t.min,
      static_cast<double>(o.batch) / t.median);
  return 0;
}

int Run(const BenchOptions& o) {
  namespace w = hpcai500::worker;
  if (IsDetection(o.model)) return RunDetection(o);
  if (o.threads > 0) torch::set_num_threads(o.threads);
  torch::manual_seed(0);
  const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);

  w::ResNetOptions model_options;
  model_options.depth = w::ResNetDepthFromName(o.model);
  model_options.num_classes = o.image_size <= 64 ? 10 : 1000;
  model_options.small_input_stem =
      o.small_stem < 0 ? o.image_size <= 64 : o.small_stem == 1;
  w::ResNet model(model_options);
  model->to(device);
  if (o.channels_last == 1) w::ToChannelsLast(*model);
  model->train();

  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
  std::vector<torch::Tensor> params = model->parameters();
  w::LossScaler scaler = w::LossScaler::ForPrecision(o.precision);

  torch::Tensor images =
      torch::randn({o.batch, 3, o.image_size, o.image_size}, device);
  if (o.channels_last == 1) images = w::ChannelsLastInput(images);
  torch::Tensor labels = torch::randint(
      model_options.num_classes, {o.batch},
      torch::TensorOptions().dtype(torch::kInt64).device(device));

  const StepTimes t = TimeSteps(o, device, [&] {
    // zero_grad(set_to_none=True), as PyTorch recommends for speed.
    for (torch::Tensor& p : params) p.mutable_grad().reset();
    torch::Tensor loss;
    {
      w::AutocastScope autocast(o.precision, device);
      loss =
          torch::nn::functional::cross_entropy(model->forward(images), labels);
    }
    scaler.Scale(loss).backward();
    scaler.Step(optimizer, params);
  });
  std::printf(
      "RESULT {\"impl\": \"hpcai500\", \"model\": \"%s\", \"image_size\": "
      "%lld, \"batch\": %lld, \"threads\": %d, \"precision\": \"%s\", "
      "\"device\": \"%s\", \"channels_last\": %s, \"steps\": %d, "
      "\"median_step_s\": %.6f, \"min_step_s\": %.6f, \"images_per_s\": "
      "%.3f}\n",
      o.model.c_str(), static_cast<long long>(o.image_size),
      static_cast<long long>(o.batch), torch::get_num_threads(),
      o.precision.c_str(), o.device.c_str(),
      o.channels_last == 1 ? "true" : "false", o.steps, t.median, t.min,
      static_cast<double>(o.batch) / t.median);
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
