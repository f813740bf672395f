// --gpu-decode's logic on the CPU (the GPU checks: tests/worker/
// gpu_decode_test.cc): the batched augmentation against the CPU path's
// resampling, the loader's batches against ImageLoader's for the same seed
// (a libjpeg-turbo decoder standing in for nvJPEG), the nvJPEG loader's
// error for a missing library, and the runs --gpu-decode refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "methodology/registry.h"
#include "tests/worker/test_util.h"
#include "worker/data/batch_resample.h"
#include "worker/data/device_input.h"
#include "worker/data/gpu_image_loader.h"
#include "worker/data/image_data.h"
#include "worker/data/image_loader.h"
#include "worker/data/nvjpeg_decoder.h"
#include "worker/data/open_dataset.h"
#include "worker/data/resample.h"

#ifdef HPCAI500_HAVE_TURBOJPEG
#include "tests/worker/jpeg_util.h"
#endif

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;

using hpcai500::testing::ErrorOf;
using hpcai500::testing::ScratchDir;
#ifdef HPCAI500_HAVE_TURBOJPEG
using hpcai500::testing::EncodeJpeg;
using hpcai500::testing::WriteFileBytes;
#endif

// Random packed RGB pixels of `images`, laid out one after another.
torch::Tensor RandomPixels(const std::vector<PackedImage>& images,
                           std::mt19937_64& rng) {
  const PackedImage& last = images.back();
  std::vector<uint8_t> bytes(last.offset + last.width * last.height * 3);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() % 256);
  return torch::tensor(bytes, torch::kUInt8);
}

// The CPU path's output for image b: ResampleToChw on its own pixels.
std::vector<float> CpuSample(const torch::Tensor& pixels,
                             const PackedImage& image, const SamplePlan& plan,
                             int64_t size) {
  std::vector<float> out(3 * size * size);
  const CropBox& crop = plan.crop;
  ResampleToChw(pixels.data_ptr<uint8_t>() + image.offset, image.width,
                image.height, crop.x, crop.y, crop.width, crop.height, size,
                plan.flip, Normalizer(kImageNetNormalization), out.data());
  return out;
}

// The batched resampling samples what ResampleToChw samples: up- and
// down-scaling crops, flipped or not, of images of different sizes, agree
// to float rounding (the same operations in the same order; 1e-5 of values
// within about +-2.7).
TEST(ResampleBatch, EqualsTheCpuPathForTheSamePlans) {
  std::mt19937_64 rng(17);
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {40, 30}, {500, 375}, {37, 61}, {120, 90}, {16, 16}, {300, 200}};
  std::vector<PackedImage> images;
  int64_t offset = 0;
  for (const auto& [w, h] : sizes) {
    images.push_back({offset, w, h});
    offset += w * h * 3;
  }
  const torch::Tensor pixels = RandomPixels(images, rng);
  ImageFolderOptions options;
  const int64_t size = 24;
  std::vector<SamplePlan> plans;
  for (size_t b = 0; b < images.size(); ++b) {
    const Split split = b % 3 == 2 ? Split::kEval : Split::kTrain;
    plans.push_back(
        PlanSample(split, images[b].width, images[b].height, options, rng));
  }
  plans[0].flip = true;  // both kinds, whatever the draws
  plans[1].flip = false;
  const torch::Tensor batch =
      ResampleBatch(pixels, images, plans, size, kImageNetNormalization);
  ASSERT_EQ(
      batch.sizes(),
      torch::IntArrayRef({static_cast<int64_t>(images.size()), 3, size, size}));
  EXPECT_TRUE(batch.is_contiguous());
  EXPECT_EQ(batch.scalar_type(), torch::kFloat32);
  for (size_t b = 0; b < images.size(); ++b) {
    const std::vector<float> expected =
        CpuSample(pixels, images[b], plans[b], size);
    const torch::Tensor want = torch::tensor(expected).view({3, size, size});
    EXPECT_LT((batch[b] - want).abs().max().item<float>(), 1e-5f)
        << "image " << b;
  }
}

TEST(ResampleBatch, RefusesACropOutsideItsImage) {
  const std::vector<PackedImage> images = {{0, 8, 8}};
  const torch::Tensor pixels = torch::zeros({8 * 8 * 3}, torch::kUInt8);
  SamplePlan plan;
  plan.crop = {4, 0, 5, 8};  // one column past the right edge
  EXPECT_NE(ErrorOf([&] {
              ResampleBatch(pixels, images, {plan}, 4, kImageNetNormalization);
            }).find("outside"),
            std::string::npos);
  const std::vector<PackedImage> beyond = {{8, 8, 8}};  // past the pixels
  plan.crop = {0, 0, 8, 8};
  EXPECT_NE(ErrorOf([&] {
              ResampleBatch(pixels, beyond, {plan}, 4, kImageNetNormalization);
            }).find("outside"),
            std::string::npos);
}

TEST(OpenNvjpeg, NamesTheLibraryItCannotLoad) {
  const std::string missing = "/nonexistent/hpcai500/libnvjpeg.so.13";
  const std::string error = ErrorOf([&] { OpenNvjpeg({missing}); });
  EXPECT_NE(error.find("--gpu-decode"), std::string::npos) << error;
#ifdef HPCAI500_HAVE_NVJPEG
  EXPECT_NE(error.find(missing), std::string::npos) << error;
  EXPECT_NE(error.find("libnvjpeg.so.13"), std::string::npos) << error;
#else
  EXPECT_NE(error.find("without nvJPEG"), std::string::npos) << error;
#endif
}

TEST(OpenNvjpeg, NamesTheEntryPointsALibraryLacks) {
#ifndef HPCAI500_HAVE_NVJPEG
  GTEST_SKIP() << "built without nvJPEG's header";
#endif
  // libz loads but is no nvJPEG.
  const std::string error = ErrorOf([] { OpenNvjpeg({"libz.so.1"}); });
  EXPECT_NE(error.find("lacks nvjpegCreateEx"), std::string::npos) << error;
}

WorkerOptions GpuDecodeOptions(const std::string& config) {
  WorkerOptions o;
  const ConfigInfo* info =
      Registry::Builtin().FindConfig("image_classification", config);
  if (info != nullptr) o.config = *info;
  o.args.gpu_decode = true;
  return o;
}

TEST(GpuDecodeProblem, RefusesDataWithoutJpegFiles) {
  EXPECT_EQ(GpuDecodeProblem(GpuDecodeOptions("imagenet")), "");
  const std::string synthetic =
      GpuDecodeProblem(GpuDecodeOptions("synthetic_resnet50"));
  EXPECT_NE(synthetic.find("--gpu-decode"), std::string::npos) << synthetic;
  EXPECT_NE(synthetic.find("synthetic data"), std::string::npos) << synthetic;
  WorkerOptions imagenet_synthetic = GpuDecodeOptions("imagenet");
  imagenet_synthetic.config.real_data = false;  // --data synthetic
  EXPECT_NE(GpuDecodeProblem(imagenet_synthetic).find("synthetic data"),
            std::string::npos);
  const std::string cifar = GpuDecodeProblem(GpuDecodeOptions("cifar10"));
  EXPECT_NE(cifar.find("dataset cifar10"), std::string::npos) << cifar;
  WorkerOptions off = GpuDecodeOptions("cifar10");
  off.args.gpu_decode = false;
  EXPECT_EQ(GpuDecodeProblem(off), "");
}

// The registry's fast_paths (what the coordinator accepts at submit) list
// gpu_decode for exactly the configs this worker decodes on the GPU.
TEST(GpuDecodeProblem, TheRegistryListsGpuDecodeWhereTheWorkerServesIt) {
  for (const ConfigInfo& config : Registry::Builtin().configs()) {
    WorkerOptions o;
    o.config = config;
    o.args.gpu_decode = true;
    const bool listed = std::count(config.fast_paths.begin(),
                                   config.fast_paths.end(), "gpu_decode") > 0;
    EXPECT_EQ(listed, GpuDecodeProblem(o).empty())
        << config.workload << "/" << config.name << ": " << GpuDecodeProblem(o);
  }
}

#ifdef HPCAI500_HAVE_TURBOJPEG

void WriteJpeg(const std::string& path, int width, int height,
               std::mt19937_64& rng) {
  // Smooth gradients with noise, like a photo, so that JPEG keeps detail.
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = (x * (3 + c) + y * (5 - c)) % 200 + rng() % 50;
        rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(v);
      }
    }
  }
  WriteFileBytes(path, EncodeJpeg(rgb, width, height, TJSAMP_420));
}

// nvJPEG's stand-in: libjpeg-turbo at full size, as ImageFolderDataset
// decodes when the crop allows no reduction.
class TurboDecoder final : public JpegBatchDecoder {
 public:
  DecodedBatch Decode(
      const std::vector<const std::vector<uint8_t>*>& jpegs) override {
    ++batches;
    DecodedBatch out;
    std::vector<uint8_t> packed;
    tjhandle tj = tjInitDecompress();
    for (const std::vector<uint8_t>* jpeg : jpegs) {
      int w = 0, h = 0, subsampling = 0, colorspace = 0;
      if (tjDecompressHeader3(tj, jpeg->data(), jpeg->size(), &w, &h,
                              &subsampling, &colorspace) != 0) {
        out.images.push_back({});
        out.errors.push_back("turbo cannot read it");
        continue;
      }
      sizes.push_back({w, h});
      const int64_t offset = packed.size();
      packed.resize(offset + static_cast<size_t>(w) * h * 3);
      tjDecompress2(tj, jpeg->data(), jpeg->size(), packed.data() + offset, w,
                    0, h, TJPF_RGB, 0);
      out.images.push_back({offset, w, h});
      out.errors.push_back("");
    }
    tjDestroy(tj);
    out.pixels = torch::tensor(packed, torch::kUInt8);
    return out;
  }
  torch::Device device() const override { return torch::kCPU; }
  int batches = 0;
  std::vector<std::pair<int, int>> sizes;  // of every image decoded
};

// Images no wider or taller than the crop size: libjpeg-turbo decodes them
// at full size (ChooseDecodeScale finds no reduction), so the CPU path and
// the GPU path's code with the same decoder must agree to rounding.
class GpuLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(5);
    for (int c = 0; c < 3; ++c) {
      const std::string cls(1, static_cast<char>('a' + c));
      fs::create_directories(dir_.path() + "/" + cls);
      for (int i = 0; i < 4; ++i) {
        // A size of its own per file: the decoder's record names the file.
        WriteJpeg(dir_.path() + "/" + cls + "/" + std::to_string(i) + ".jpg",
                  40 + 7 * i + c, 56 - 5 * i, rng);
      }
    }
    std::ofstream(dir_.path() + "/b/broken.JPEG") << "not a jpeg";
    options_.crop_size = 56;
    loader_.batch_size = 5;
    loader_.threads = 2;
    loader_.seed = 11;
    loader_.world_size = 2;
    loader_.rank = 1;
    loader_.warn = [](const std::string&) {};
  }

  ScratchDir dir_{"gpu_loader"};
  ImageFolderOptions options_;
  LoaderOptions loader_;
};

TEST_F(GpuLoaderTest, MakesImageLoadersBatchesForTheSameSeed) {
  const ImageFolderDataset data(dir_.path(), Split::kTrain, options_);
  ImageLoader cpu(data, loader_);
  auto decoder = std::make_unique<TurboDecoder>();
  TurboDecoder* turbo = decoder.get();
  GpuImageLoader gpu(data, loader_, std::move(decoder));
  for (int epoch = 1; epoch <= 2; ++epoch) {
    cpu.StartEpoch(epoch);
    gpu.StartEpoch(epoch);
    int64_t samples = 0;
    while (std::optional<ImageBatch> want = cpu.Next()) {
      std::optional<ImageBatch> got = gpu.Next();
      ASSERT_TRUE(got.has_value()) << "epoch " << epoch;
      ASSERT_TRUE(torch::equal(got->labels, want->labels));
      ASSERT_EQ(got->images.sizes(), want->images.sizes());
      EXPECT_TRUE(got->images.is_contiguous());
      // Same crops and flips, same taps; the CPU loader's pixels are rounded
      // to a level: half a level (0.5 / (255 * std)) and float rounding.
      const torch::Tensor cpu_input =
          ImagesOn(Batch{want->images, want->labels, {}, want->normalization},
                   torch::kCPU, /*channels_last=*/false);
      EXPECT_LT((got->images - cpu_input).abs().max().item<float>(),
                0.5f / (255 * 0.224f) + 1e-5f);
      samples += got->size();
    }
    EXPECT_FALSE(gpu.Next().has_value());
    // Rank 1 of 2 holds half of the 13 files; the corrupt one, once met,
    // is skipped by both loaders alike.
    EXPECT_GE(samples, 5) << "epoch " << epoch;
    EXPECT_LE(samples, 7) << "epoch " << epoch;
  }
  EXPECT_EQ(gpu.corrupt_samples(), cpu.corrupt_samples());
  EXPECT_EQ(turbo->batches, 4);  // two batches (7 of 13) an epoch
}

TEST_F(GpuLoaderTest, ReadsEveryImageOfTheShardOncePerEpoch) {
  const ImageFolderDataset data(dir_.path(), Split::kTrain, options_);
  loader_.world_size = 1;
  loader_.rank = 0;
  loader_.queue_batches = 1;
  auto decoder = std::make_unique<TurboDecoder>();
  TurboDecoder* turbo = decoder.get();
  GpuImageLoader gpu(data, loader_, std::move(decoder));
  std::vector<std::pair<int, int>> every_file;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i)
      every_file.push_back({40 + 7 * i + c, 56 - 5 * i});
  }
  std::sort(every_file.begin(), every_file.end());
  for (int epoch = 0; epoch < 2; ++epoch) {
    turbo->sizes.clear();
    gpu.StartEpoch(epoch);
    int64_t samples = 0;
    while (std::optional<ImageBatch> batch = gpu.Next()) {
      samples += batch->size();
    }
    std::sort(turbo->sizes.begin(), turbo->sizes.end());
    EXPECT_EQ(turbo->sizes, every_file) << "epoch " << epoch;
    EXPECT_EQ(samples, 12) << "epoch " << epoch;
  }
  EXPECT_EQ(gpu.corrupt_samples(), 1);
}

TEST_F(GpuLoaderTest, RefusesADataSetWithoutJpegFiles) {
  const std::vector<uint8_t> record(kCifarRecordBytes, 1);
  std::ofstream(dir_.path() + "/test_batch.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(record.data()), record.size());
  const Cifar10Dataset cifar(dir_.path(), Split::kEval);
  EXPECT_NE(ErrorOf([&] {
              GpuImageLoader(cifar, loader_, std::make_unique<TurboDecoder>());
            }).find("--gpu-decode"),
            std::string::npos);
}

#endif  // HPCAI500_HAVE_TURBOJPEG

}  // namespace
}  // namespace hpcai500::worker
