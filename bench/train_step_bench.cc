// hpcai500-train-step-bench: times synthetic ResNet training steps with the
// worker's own model (worker/resnet.h), optimiser and precision helpers, the
// same loop bench/peers/train_step.py runs in PyTorch eager, and prints one
// RESULT line of JSON. Warm-up steps are excluded; the reported step time is
// the median of the timed steps.
//
//   hpcai500-train-step-bench --model resnet50 --image-size 224 --batch 16
//       [--threads N] [--warmup N] [--steps N] [--precision fp32|bf16]
//       [--device cpu|cuda] [--channels-last 0|1] [--small-stem 0|1]
//
// --small-stem defaults to 1 for images of 64 pixels or less (the CIFAR
// stem of worker/resnet.h), else 0.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/precision.h"
#include "worker/resnet.h"

namespace {

struct BenchOptions {
  std::string model = "resnet50";
  int64_t image_size = 224;
  int64_t batch = 16;
  int threads = 0;  // 0: LibTorch's default
  int warmup = 3;
  int steps = 10;
  std::string precision = "fp32";
  std::string device = "cpu";
  bool channels_last = true;
  int small_stem = -1;  // -1: by image size
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
      o.channels_last = ParseInt("--channels-last", value, 0, 1) == 1;
    } else if (name == "small-stem") {
      o.small_stem = static_cast<int>(ParseInt("--small-stem", value, 0, 1));
    } else {
      throw std::invalid_argument("unknown flag --" + name);
    }
  }
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

int Run(const BenchOptions& o) {
  namespace w = hpcai500::worker;
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
  if (o.channels_last) w::ToChannelsLast(*model);
  model->train();

  torch::optim::SGD optimizer(
      model->parameters(),
      torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
  std::vector<torch::Tensor> params = model->parameters();
  w::LossScaler scaler = w::LossScaler::ForPrecision(o.precision);

  torch::Tensor images =
      torch::randn({o.batch, 3, o.image_size, o.image_size}, device);
  if (o.channels_last) images = w::ChannelsLastInput(images);
  torch::Tensor labels = torch::randint(
      model_options.num_classes, {o.batch},
      torch::TensorOptions().dtype(torch::kInt64).device(device));

  auto step = [&] {
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
  };

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
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median =
      n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  std::printf(
      "RESULT {\"impl\": \"hpcai500\", \"model\": \"%s\", \"image_size\": "
      "%lld, \"batch\": %lld, \"threads\": %d, \"precision\": \"%s\", "
      "\"device\": \"%s\", \"channels_last\": %s, \"steps\": %d, "
      "\"median_step_s\": %.6f, \"min_step_s\": %.6f, \"images_per_s\": "
      "%.3f}\n",
      o.model.c_str(), static_cast<long long>(o.image_size),
      static_cast<long long>(o.batch), torch::get_num_threads(),
      o.precision.c_str(), o.device.c_str(), o.channels_last ? "true" : "false",
      o.steps, median, sorted.front(), static_cast<double>(o.batch) / median);
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
