// hpcai500-input-bench: JPEG decode + random-resized-crop + flip to uint8
// pixels of every image under an ImageNet-style folder with the worker's
// ImageFolderDataset (libjpeg-turbo), on one thread: the work of a decoder
// thread (the worker normalises on the device, worker/data/device_input.h).
// bench/peers/input_pipeline.py does the same with torchvision + PIL, and
// normalises on the CPU besides. Prints one RESULT line of JSON.
//
//   hpcai500-input-bench --root DIR [--passes N] [--crop 224]
//
// One untimed pass warms the page cache; the images/s reported is the best
// of the timed passes.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/data/image_data.h"

namespace {

int Run(int argc, char** argv) {
  std::string root;
  int passes = 3;
  int64_t crop = 224;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--root") {
      root = value;
    } else if (arg == "--passes") {
      passes = std::stoi(value);
      if (passes < 1) throw std::invalid_argument("--passes must be >= 1");
    } else if (arg == "--crop") {
      crop = std::stoll(value);
      if (crop < 1) throw std::invalid_argument("--crop must be >= 1");
    } else {
      throw std::invalid_argument("unknown flag " + arg);
    }
  }
  if (root.empty()) throw std::invalid_argument("--root DIR is required");
  torch::set_num_threads(1);

  hpcai500::worker::ImageFolderOptions options;
  options.crop_size = crop;
  const hpcai500::worker::ImageFolderDataset dataset(
      root, hpcai500::worker::Split::kTrain, options);
  const auto shape = dataset.sample_shape();
  std::vector<uint8_t> out(shape[0] * shape[1] * shape[2]);
  std::mt19937_64 rng(0);
  double checksum = 0;
  auto pass = [&] {
    for (int64_t i = 0; i < dataset.size(); ++i) {
      dataset.Get(i, rng, out.data());
      checksum += out[0];
    }
  };
  pass();  // warm-up: page cache, decoder handles
  double best = 1e300;
  for (int p = 0; p < passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  std::printf(
      "RESULT {\"impl\": \"hpcai500\", \"images\": %lld, \"passes\": %d, "
      "\"best_pass_s\": %.6f, \"images_per_s\": %.3f, \"checksum\": %.3f}\n",
      static_cast<long long>(dataset.size()), passes, best,
      static_cast<double>(dataset.size()) / best, checksum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-input-bench: %s\n", e.what());
  }
  return 2;
}
