// The way batches reach the device (worker/data/device_input.h), on the CPU:
// ImagesOn turns the loaders' uint8 batches into what the CPU decoders used
// to write as float (CIFAR-10 exactly; JPEG crops within half a level, the
// rounding to uint8), and DevicePrefetcher hands out every batch of a pass
// once, in order, one fetched ahead.
#include "worker/data/device_input.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"
#include "worker/data/image_data.h"
#include "worker/data/image_loader.h"
#include "worker/data/resample.h"

#ifdef HPCAI500_HAVE_TURBOJPEG
#include <turbojpeg.h>

#include "tests/worker/jpeg_util.h"
#endif

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;

using hpcai500::testing::ScratchDir;

// What the CPU decoders wrote before batches became uint8: every pixel p of
// channel c as p * scale[c] + bias[c] in float (Normalizer's arithmetic).
torch::Tensor OldFloatPath(const torch::Tensor& pixels,
                           const Normalization& normalization) {
  const Normalizer norm(normalization);
  const torch::Tensor in = pixels.contiguous();
  torch::Tensor out = torch::empty(in.sizes(), torch::kFloat32);
  const uint8_t* p = in.data_ptr<uint8_t>();
  float* o = out.data_ptr<float>();
  const int64_t plane = in.size(2) * in.size(3);
  for (int64_t i = 0; i < in.numel(); ++i) {
    const int c = static_cast<int>(i / plane % 3);
    o[i] = static_cast<float>(p[i]) * norm.scale[c] + norm.bias[c];
  }
  return out;
}

float MaxDifference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<float>();
}

// Every batch of `loader`'s epoch.
std::vector<ImageBatch> DrainBatches(ImageLoader& loader, int epoch) {
  loader.StartEpoch(epoch);
  std::vector<ImageBatch> batches;
  while (std::optional<ImageBatch> batch = loader.Next()) {
    batches.push_back(std::move(*batch));
  }
  return batches;
}

Batch AsBatch(const ImageBatch& b) {
  return Batch{b.images, b.labels, {}, b.normalization};
}

// CIFAR-10 records of random pixels, `n` of them, in `path`.
void WriteRandomCifar(const std::string& path, int n, std::mt19937_64& rng) {
  std::vector<char> bytes;
  for (int r = 0; r < n; ++r) {
    bytes.push_back(static_cast<char>(r % 10));
    for (int64_t i = 1; i < kCifarRecordBytes; ++i) {
      bytes.push_back(static_cast<char>(rng() % 256));
    }
  }
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

TEST(ImagesOn, NormalisesCifarBatchesAsTheFloatPathDidInBothLayouts) {
  ScratchDir dir("device_input_cifar");
  std::mt19937_64 rng(4);
  WriteRandomCifar(dir.path() + "/test_batch.bin", 7, rng);
  for (int i = 1; i <= 5; ++i) {
    WriteRandomCifar(dir.path() + "/data_batch_" + std::to_string(i) + ".bin",
                     2, rng);
  }
  for (const Split split : {Split::kTrain, Split::kEval}) {
    const Cifar10Dataset data(dir.path(), split);
    LoaderOptions options;
    options.batch_size = 3;  // 10 and 7 samples: the last batch partial
    options.threads = 2;
    options.seed = 8;
    options.shuffle = split == Split::kTrain;
    ImageLoader loader(data, options);
    const std::vector<ImageBatch> batches = DrainBatches(loader, /*epoch=*/1);
    ASSERT_EQ(batches.size(), split == Split::kTrain ? 4u : 3u);
    EXPECT_EQ(batches.back().size(), 1);
    for (const ImageBatch& batch : batches) {
      ASSERT_EQ(batch.images.scalar_type(), torch::kUInt8);
      ASSERT_TRUE(batch.normalization.has_value());
      const torch::Tensor old =
          OldFloatPath(batch.images, *batch.normalization);
      for (const bool channels_last : {false, true}) {
        const torch::Tensor x =
            ImagesOn(AsBatch(batch), torch::kCPU, channels_last);
        EXPECT_EQ(x.scalar_type(), torch::kFloat32);
        EXPECT_EQ(x.sizes(), old.sizes());
        EXPECT_TRUE(x.is_contiguous(channels_last
                                        ? at::MemoryFormat::ChannelsLast
                                        : at::MemoryFormat::Contiguous));
        EXPECT_LE(MaxDifference(x, old), 1e-6f) << channels_last;
      }
    }
  }
}

TEST(ImagesOn, PassesFloatImagesThroughAndRefusesOddNormalisedOnes) {
  const torch::Tensor images = torch::randn({2, 16, 5, 6});
  const torch::Tensor same = ImagesOn(Batch{images, {}, {}, std::nullopt},
                                      torch::kCPU, /*channels_last=*/false);
  EXPECT_TRUE(torch::equal(same, images));
  const torch::Tensor nhwc = ImagesOn(Batch{images, {}, {}, std::nullopt},
                                      torch::kCPU, /*channels_last=*/true);
  EXPECT_TRUE(nhwc.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(nhwc, images));
  EXPECT_THROW(ImagesOn(Batch{images, {}, {}, kImageNetNormalization},
                        torch::kCPU, false),
               std::invalid_argument);  // float, 16 channels
}

#ifdef HPCAI500_HAVE_TURBOJPEG

// Sample `index` of `data` decoded at full size and resampled as `plan`:
// the old float path's values and the new path's rounded pixels.
struct Resampled {
  std::vector<float> old_float;
  std::vector<uint8_t> pixels;
};
Resampled ResampleFile(const std::string& path, Split split,
                       const ImageFolderOptions& options, uint64_t seed,
                       int epoch, int64_t index) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> jpeg((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsampling = 0, colorspace = 0;
  EXPECT_EQ(tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &w, &h,
                                &subsampling, &colorspace),
            0);
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  EXPECT_EQ(tjDecompress2(tj, jpeg.data(), jpeg.size(), rgb.data(), w, 0, h,
                          TJPF_RGB, 0),
            0);
  tjDestroy(tj);
  std::mt19937_64 rng = SampleRng(seed, epoch, index);
  const SamplePlan plan = PlanSample(split, w, h, options, rng);
  const CropBox& c = plan.crop;
  const int64_t size = options.crop_size;
  Resampled out{std::vector<float>(3 * size * size),
                std::vector<uint8_t>(3 * size * size)};
  ResampleToChw(rgb.data(), w, h, c.x, c.y, c.width, c.height, size, plan.flip,
                Normalizer(options.normalization), out.old_float.data());
  ResampleToChwPixels(rgb.data(), w, h, c.x, c.y, c.width, c.height, size,
                      plan.flip, out.pixels.data());
  return out;
}

// Images no larger than the crop, so that libjpeg-turbo decodes them at full
// size (no reduced scale) and the test's own decode is the loader's.
TEST(ImagesOn, NormalisesJpegBatchesWithinHalfALevelOfTheFloatPath) {
  ScratchDir dir("device_input_jpeg");
  std::mt19937_64 rng(6);
  for (const std::string cls : {"a", "b"}) {
    fs::create_directories(dir.path() + "/" + cls);
    for (int i = 0; i < 4; ++i) {
      const int w = 30 + 5 * i, h = 40 - 3 * i;
      std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
      for (size_t k = 0; k < rgb.size(); ++k) {
        rgb[k] = static_cast<uint8_t>((k * 7 + rng() % 60) % 256);
      }
      hpcai500::testing::WriteFileBytes(
          dir.path() + "/" + cls + "/" + std::to_string(i) + ".jpg",
          hpcai500::testing::EncodeJpeg(rgb, w, h, TJSAMP_444));
    }
  }
  ImageFolderOptions folder;
  folder.crop_size = 40;
  folder.resize_size = 46;
  const float half_level = 0.5f / (255 * 0.224f);  // ImageNet's smallest std
  for (const Split split : {Split::kTrain, Split::kEval}) {
    const ImageFolderDataset data(dir.path(), split, folder);
    LoaderOptions options;
    options.batch_size = 3;
    options.threads = 2;
    options.seed = 21;
    options.shuffle = split == Split::kTrain;
    ImageLoader loader(data, options);
    const int epoch = 2;
    const std::vector<int64_t> shard = EpochShard(options, data.size(), epoch);
    const std::vector<ImageBatch> batches = DrainBatches(loader, epoch);
    ASSERT_EQ(batches.size(), 3u);  // 8 images: 3, 3, 2
    int64_t next = 0;
    for (const ImageBatch& batch : batches) {
      const int64_t n = batch.size();
      std::vector<float> old_float;
      std::vector<uint8_t> pixels;
      for (int64_t i = 0; i < n; ++i, ++next) {
        const Resampled r =
            ResampleFile(data.Describe(shard[next]), split, folder,
                         options.seed, epoch, shard[next]);
        old_float.insert(old_float.end(), r.old_float.begin(),
                         r.old_float.end());
        pixels.insert(pixels.end(), r.pixels.begin(), r.pixels.end());
      }
      const torch::Tensor want_pixels =
          torch::tensor(pixels, torch::kUInt8).view(batch.images.sizes());
      ASSERT_TRUE(torch::equal(batch.images, want_pixels))
          << "the loader's crops, flips and rounding";
      const torch::Tensor old =
          torch::tensor(old_float).view(batch.images.sizes());
      for (const bool channels_last : {false, true}) {
        const torch::Tensor x =
            ImagesOn(AsBatch(batch), torch::kCPU, channels_last);
        EXPECT_LE(
            MaxDifference(x, OldFloatPath(want_pixels, folder.normalization)),
            1e-6f);
        EXPECT_LE(MaxDifference(x, old), half_level + 1e-6f);
      }
    }
    EXPECT_EQ(next, 8);
  }
}

#endif  // HPCAI500_HAVE_TURBOJPEG

// A Dataset of numbered samples: training sample i is the float image
// filled with i and label i, evaluation sample i is 1000 + i; each pass in
// batches of `batch` in order. Counts the calls of NextTrain / NextEval.
class NumberedData final : public Dataset {
 public:
  NumberedData(int64_t train, int64_t eval, int64_t batch)
      : train_(train), eval_(eval), batch_(batch) {}
  int64_t train_size() const override { return train_; }
  int64_t eval_size() const override { return eval_; }
  std::array<int64_t, 3> sample_shape() const override { return {1, 2, 2}; }
  int64_t num_classes() const override { return 10; }
  void StartEpoch(int, int64_t) override { Start(0, train_); }
  std::optional<Batch> NextTrain() override {
    ++train_calls;
    return Take();
  }
  void StartEval() override { Start(1000, eval_); }
  std::optional<Batch> NextEval() override {
    ++eval_calls;
    return Take();
  }

  int train_calls = 0;
  int eval_calls = 0;

 private:
  void Start(int64_t first, int64_t n) {
    next_ = first;
    end_ = first + n;
  }
  std::optional<Batch> Take() {
    if (next_ >= end_) return std::nullopt;
    const int64_t n = std::min(batch_, end_ - next_);
    torch::Tensor ids = torch::arange(next_, next_ + n, torch::kInt64);
    next_ += n;
    Batch b;
    b.images = ids.to(torch::kFloat32).view({n, 1, 1, 1}).expand({n, 1, 2, 2});
    b.labels = ids;
    return b;
  }

  const int64_t train_, eval_, batch_;
  int64_t next_ = 0, end_ = 0;
};

// The sample ids of every batch until nullopt, and the batch sizes.
std::vector<int64_t> DrainIds(DevicePrefetcher& input, bool train,
                              std::vector<int64_t>* sizes) {
  std::vector<int64_t> ids;
  while (std::optional<Batch> b =
             train ? input.NextTrain() : input.NextEval()) {
    sizes->push_back(b->size());
    for (int64_t i = 0; i < b->size(); ++i) {
      ids.push_back(b->labels[i].item<int64_t>());
      EXPECT_EQ(b->images[i][0][1][1].item<float>(), ids.back());
    }
  }
  return ids;
}

std::vector<int64_t> Range(int64_t first, int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = first + i;
  return v;
}

TEST(DevicePrefetcher, YieldsEveryBatchOnceInOrderWithTheLastPartial) {
  auto owned = std::make_unique<NumberedData>(10, 5, 4);
  NumberedData* data = owned.get();
  DevicePrefetcher input(std::move(owned), torch::kCPU);
  EXPECT_EQ(input.train_size(), 10);
  EXPECT_EQ(input.eval_size(), 5);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    input.StartEpoch(epoch, 0);
    std::vector<int64_t> sizes;
    EXPECT_EQ(DrainIds(input, /*train=*/true, &sizes), Range(0, 10));
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
    EXPECT_FALSE(input.NextTrain().has_value());  // and stays exhausted
  }
  // Per epoch: three batches and the one nullopt, never asked again.
  EXPECT_EQ(data->train_calls, 8);
  input.StartEval();
  std::vector<int64_t> sizes;
  EXPECT_EQ(DrainIds(input, /*train=*/false, &sizes), Range(1000, 5));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 1}));
}

TEST(DevicePrefetcher, FetchesOneBatchAheadOfTheOneItHandsOut) {
  auto owned = std::make_unique<NumberedData>(12, 0, 4);
  NumberedData* data = owned.get();
  DevicePrefetcher input(std::move(owned), torch::kCPU);
  input.StartEpoch(1, 0);
  EXPECT_EQ(data->train_calls, 0);  // nothing before the first Next
  std::optional<Batch> first = input.NextTrain();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->labels[0].item<int64_t>(), 0);
  EXPECT_EQ(data->train_calls, 2);  // batch 0 handed out, batch 1 in flight
  input.NextTrain();
  EXPECT_EQ(data->train_calls, 3);
}

TEST(DevicePrefetcher, AnEmptyShardYieldsNothing) {
  auto owned = std::make_unique<NumberedData>(0, 0, 4);
  NumberedData* data = owned.get();
  DevicePrefetcher input(std::move(owned), torch::kCPU);
  input.StartEpoch(1, 0);
  EXPECT_FALSE(input.NextTrain().has_value());
  EXPECT_FALSE(input.NextTrain().has_value());
  input.StartEval();
  EXPECT_FALSE(input.NextEval().has_value());
  EXPECT_EQ(data->train_calls, 1);
  EXPECT_EQ(data->eval_calls, 1);
}

TEST(DevicePrefetcher, ANewPassDropsTheBatchFetchedForTheOldOne) {
  DevicePrefetcher input(std::make_unique<NumberedData>(12, 3, 4), torch::kCPU);
  input.StartEpoch(1, 0);
  ASSERT_TRUE(input.NextTrain().has_value());  // batch 1 now fetched ahead
  input.StartEval();
  std::vector<int64_t> sizes;
  EXPECT_EQ(DrainIds(input, /*train=*/false, &sizes), Range(1000, 3));
  input.StartEpoch(2, 0);
  sizes.clear();
  EXPECT_EQ(DrainIds(input, /*train=*/true, &sizes), Range(0, 12));
}

TEST(DevicePrefetcher, RefusesTheNextBatchOfAPassNotStarted) {
  DevicePrefetcher input(std::make_unique<NumberedData>(4, 4, 4), torch::kCPU);
  EXPECT_THROW(input.NextTrain(), std::logic_error);
  input.StartEpoch(1, 0);
  EXPECT_THROW(input.NextEval(), std::logic_error);
}

TEST(DevicePrefetcher, KeepsTheNormalisationOfUint8Batches) {
  class OneUint8Batch final : public Dataset {
   public:
    int64_t train_size() const override { return 2; }
    int64_t eval_size() const override { return 0; }
    std::array<int64_t, 3> sample_shape() const override { return {3, 1, 1}; }
    int64_t num_classes() const override { return 2; }
    void StartEpoch(int, int64_t) override { done_ = false; }
    std::optional<Batch> NextTrain() override {
      if (done_) return std::nullopt;
      done_ = true;
      return Batch{torch::full({2, 3, 1, 1}, 255, torch::kUInt8),
                   torch::zeros({2}, torch::kInt64),
                   {},
                   kCifar10Normalization};
    }
    void StartEval() override {}
    std::optional<Batch> NextEval() override { return std::nullopt; }

   private:
    bool done_ = false;
  };
  DevicePrefetcher input(std::make_unique<OneUint8Batch>(), torch::kCPU);
  input.StartEpoch(1, 0);
  const std::optional<Batch> batch = input.NextTrain();
  ASSERT_TRUE(batch.has_value());
  ASSERT_TRUE(batch->normalization.has_value());
  const torch::Tensor x = ImagesOn(*batch, torch::kCPU, false);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(
        x[1][c][0][0].item<float>(),
        (1.0f - kCifar10Normalization.mean[c]) / kCifar10Normalization.std[c],
        1e-5);
  }
}

}  // namespace
}  // namespace hpcai500::worker
