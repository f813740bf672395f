#include "worker/data/image_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "worker/data/image_loader.h"
#include "worker/data/sharding.h"

#ifdef HPCAI500_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

#include "tests/worker/test_util.h"

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;

using TempDir = hpcai500::testing::ScratchDir;
using hpcai500::testing::ErrorOf;

void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ASSERT_TRUE(out.good()) << path;
}

// --- CIFAR-10 --------------------------------------------------------------

// Record r: label labels[r], every pixel of channel c = 10 * r + 50 * c.
std::vector<uint8_t> CifarRecords(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    for (int c = 0; c < 3; ++c) {
      bytes.insert(bytes.end(), 1024, static_cast<uint8_t>(10 * r + 50 * c));
    }
  }
  return bytes;
}

TEST(Cifar10Dataset, ReadsRecordsLabelsAndPixelPlanes) {
  TempDir dir("cifar_good");
  WriteBytes(dir.path() + "/test_batch.bin", CifarRecords({3, 0, 9}));
  Cifar10Dataset test(dir.path(), Split::kEval);
  ASSERT_EQ(test.size(), 3);
  EXPECT_EQ(test.sample_shape(), (std::array<int64_t, 3>{3, 32, 32}));
  EXPECT_EQ(test.normalization().std, kCifar10Normalization.std);
  std::vector<uint8_t> out(3 * 32 * 32);
  std::mt19937_64 rng(1);
  EXPECT_EQ(test.Get(2, rng, out.data()), 9);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(out[c * 1024], 20 + 50 * c) << c;
    EXPECT_EQ(out[c * 1024 + 1023], 20 + 50 * c) << c;
  }
  EXPECT_EQ(test.Get(0, rng, out.data()), 3);
  EXPECT_THROW(test.Get(3, rng, out.data()), std::out_of_range);
}

TEST(Cifar10Dataset, TrainingCropsPadWithZeroPixels) {
  TempDir dir("cifar_train");
  std::vector<std::string> files;
  for (int i = 1; i <= 5; ++i) {
    files.push_back(dir.path() + "/data_batch_" + std::to_string(i) + ".bin");
    WriteBytes(files.back(), CifarRecords({static_cast<uint8_t>(i)}));
  }
  Cifar10Dataset train(dir.path(), Split::kTrain);
  ASSERT_EQ(train.size(), 5);
  std::vector<uint8_t> out(3 * 32 * 32);
  int padded = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    EXPECT_EQ(train.Get(4, rng, out.data()), 5);
    // A shifted crop shows the zero padding along one border of channel 1
    // (every pixel 50; channel 0's are 0 like the padding).
    const uint8_t* green = out.data() + 1024;
    EXPECT_EQ(green[32 * 16 + 16], 50);
    if (green[0] == 0 || green[1023] == 0) ++padded;
  }
  EXPECT_GT(padded, 5);
}

TEST(Cifar10Dataset, TruncatedFileIsAnErrorNamingIt) {
  TempDir dir("cifar_bad");
  std::vector<uint8_t> bytes = CifarRecords({1, 2});
  bytes.resize(bytes.size() - 100);
  WriteBytes(dir.path() + "/test_batch.bin", bytes);
  const std::string error =
      ErrorOf([&] { Cifar10Dataset(dir.path(), Split::kEval); });
  EXPECT_NE(error.find("test_batch.bin"), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  WriteBytes(dir.path() + "/test_batch.bin", CifarRecords({1, 10}));
  EXPECT_NE(ErrorOf([&] {
              Cifar10Dataset(dir.path(), Split::kEval);
            }).find("label 10"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              Cifar10Dataset(dir.path(), Split::kTrain);
            }).find("data_batch_1.bin"),
            std::string::npos);
}

// --- Crops -----------------------------------------------------------------

TEST(RandomResizedCropBox, StaysInsideWithTorchvisionScaleAndRatio) {
  ImageFolderOptions options;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const CropBox box = RandomResizedCropBox(500, 375, options, rng);
    ASSERT_GE(box.x, 0);
    ASSERT_GE(box.y, 0);
    ASSERT_LE(box.x + box.width, 500);
    ASSERT_LE(box.y + box.height, 375);
    const double area = static_cast<double>(box.width) * box.height;
    EXPECT_GE(area, 0.07 * 500 * 375);
    const double ratio = static_cast<double>(box.width) / box.height;
    EXPECT_GE(ratio, 0.7);
    EXPECT_LE(ratio, 1.4);
  }
}

TEST(RandomResizedCropBox, FallsBackToTheClampedCentreForExtremeShapes) {
  ImageFolderOptions options;
  std::mt19937_64 rng(3);
  const CropBox box = RandomResizedCropBox(1000, 10, options, rng);
  EXPECT_EQ(box.height, 10);
  EXPECT_EQ(box.width, 13);  // round(10 * 4/3)
  EXPECT_EQ(box.x, (1000 - 13) / 2);
  EXPECT_EQ(box.y, 0);
}

TEST(ChooseDecodeScale, PicksTheSmallestScaleThatStillCoversTheOutput) {
  EXPECT_EQ(ChooseDecodeScale({0, 0, 1000, 800}, 224, 224),
            (std::pair<int, int>{3, 8}));
  EXPECT_EQ(ChooseDecodeScale({0, 0, 2000, 1900}, 224, 224),
            (std::pair<int, int>{1, 8}));
  EXPECT_EQ(ChooseDecodeScale({0, 0, 448, 448}, 224, 224),
            (std::pair<int, int>{4, 8}));
  EXPECT_EQ(ChooseDecodeScale({0, 0, 230, 900}, 224, 224),
            (std::pair<int, int>{1, 1}));
}

// --- Synthetic and shards --------------------------------------------------

TEST(SyntheticImages, FixedPerSeed) {
  SyntheticImages a(4, {3, 8, 8}, 10, /*seed=*/5, torch::kCPU);
  SyntheticImages b(4, {3, 8, 8}, 10, /*seed=*/5, torch::kCPU);
  SyntheticImages c(4, {3, 8, 8}, 10, /*seed=*/6, torch::kCPU);
  EXPECT_EQ(a.images().sizes(), torch::IntArrayRef({4, 3, 8, 8}));
  EXPECT_EQ(a.labels().scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(a.images(), b.images()));
  EXPECT_TRUE(torch::equal(a.labels(), b.labels()));
  EXPECT_FALSE(torch::equal(a.images(), c.images()));
  EXPECT_GE(a.labels().min().item<int64_t>(), 0);
  EXPECT_LT(a.labels().max().item<int64_t>(), 10);
  EXPECT_THROW(SyntheticImages(0, {3, 8, 8}, 10, 1, torch::kCPU),
               std::invalid_argument);
}

TEST(ShardIndices, RanksPartitionEveryEpochDifferently) {
  std::vector<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    auto shard = ShardIndices(10, /*seed=*/1, /*epoch=*/2, rank, 3);
    EXPECT_EQ(shard.size(), rank == 0 ? 4u : 3u);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ShardIndices(10, 1, 2, 0, 3), ShardIndices(10, 1, 2, 0, 3));
  EXPECT_NE(ShardIndices(100, 1, 2, 0, 1), ShardIndices(100, 1, 3, 0, 1));
}

// --- Loader ----------------------------------------------------------------

// Sample i (< 256) is a [1, 2, 2] image filled with i, label i % 7; indices in
// `corrupt` throw CorruptSample, `broken` throws a plain error.
class FakeDataset final : public ImageDataset {
 public:
  explicit FakeDataset(int64_t n, std::set<int64_t> corrupt = {},
                       int64_t broken = -1)
      : n_(n), corrupt_(std::move(corrupt)), broken_(broken) {}
  int64_t size() const override { return n_; }
  int64_t num_classes() const override { return 7; }
  std::array<int64_t, 3> sample_shape() const override { return {1, 2, 2}; }
  int64_t Get(int64_t index, std::mt19937_64& rng,
              uint8_t* out) const override {
    if (corrupt_.count(index) > 0) throw CorruptSample("bad bytes");
    if (index == broken_) throw std::runtime_error("disk on fire");
    for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(index);
    (void)rng();
    return index % 7;
  }
  Normalization normalization() const override {
    return kImageNetNormalization;
  }
  std::string Describe(int64_t index) const override {
    return "fake:" + std::to_string(index);
  }

 private:
  int64_t n_;
  std::set<int64_t> corrupt_;
  int64_t broken_;
};

// Every sample the loader yields this epoch, by its pixel value.
std::vector<int64_t> DrainLabels(ImageLoader& loader, int epoch) {
  loader.StartEpoch(epoch);
  std::vector<int64_t> seen;
  while (auto batch = loader.Next()) {
    for (int64_t i = 0; i < batch->size(); ++i) {
      const int64_t id = batch->images[i][0][0][0].item<int64_t>();
      EXPECT_EQ(batch->labels[i].item<int64_t>(), id % 7);
      EXPECT_TRUE(torch::all(batch->images[i] == id).item<bool>());
      seen.push_back(id);
    }
  }
  return seen;
}

TEST(ImageLoader, YieldsEachSampleOfAllShardsOncePerEpochSkippingCorrupt) {
  FakeDataset data(101, /*corrupt=*/{5, 77});
  // Each loader stands for one rank's process: it warns about a corrupt
  // sample the first time its own shard meets it.
  std::vector<std::vector<std::string>> warnings(3);
  std::mutex warnings_mu;
  std::vector<std::unique_ptr<ImageLoader>> loaders;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions options;
    options.batch_size = 8;
    options.threads = 3;
    options.queue_batches = 2;
    options.seed = 11;
    options.rank = rank;
    options.world_size = 3;
    options.warn = [&warnings, &warnings_mu, rank](const std::string& line) {
      std::lock_guard<std::mutex> lock(warnings_mu);
      warnings[rank].push_back(line);
    };
    loaders.push_back(std::make_unique<ImageLoader>(data, options));
  }
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> all;
    for (auto& loader : loaders) {
      std::vector<int64_t> seen = DrainLabels(*loader, epoch);
      EXPECT_EQ(loader->batches_per_epoch(), (loader->shard_size() + 7) / 8);
      all.insert(all.end(), seen.begin(), seen.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected;
    for (int64_t i = 0; i < 101; ++i) {
      if (i != 5 && i != 77) expected.push_back(i);
    }
    EXPECT_EQ(all, expected) << "epoch " << epoch;
  }
  std::set<std::string> warned;
  for (int rank = 0; rank < 3; ++rank) {
    const std::set<std::string> unique(warnings[rank].begin(),
                                       warnings[rank].end());
    EXPECT_EQ(unique.size(), warnings[rank].size()) << "rank " << rank;
    EXPECT_EQ(loaders[rank]->corrupt_samples(),
              static_cast<int64_t>(unique.size()));
    warned.insert(unique.begin(), unique.end());
  }
  ASSERT_EQ(warned.size(), 2u);
  EXPECT_NE(warned.begin()->find("fake:5: bad bytes"), std::string::npos)
      << *warned.begin();
  EXPECT_NE(warned.rbegin()->find("fake:77: bad bytes"), std::string::npos)
      << *warned.rbegin();
}

TEST(ImageLoader, OrderIsFixedBySeedAndChangesEachEpoch) {
  FakeDataset data(64);
  LoaderOptions options;
  options.batch_size = 5;
  options.threads = 4;
  options.seed = 3;
  ImageLoader a(data, options), b(data, options);
  const std::vector<int64_t> a0 = DrainLabels(a, 0);
  EXPECT_EQ(a0.size(), 64u);
  EXPECT_EQ(DrainLabels(b, 0), a0);
  EXPECT_NE(DrainLabels(a, 1), a0);
  options.seed = 4;
  ImageLoader c(data, options);
  EXPECT_NE(DrainLabels(c, 0), a0);
}

TEST(ImageLoader, StopsAtMaxBatchesAndCanRestartMidEpoch) {
  FakeDataset data(50);
  LoaderOptions options;
  options.batch_size = 4;
  options.threads = 2;
  options.max_batches = 3;
  options.shuffle = false;
  ImageLoader loader(data, options);
  const std::vector<int64_t> seen = DrainLabels(loader, 0);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  loader.StartEpoch(1);
  ASSERT_TRUE(loader.Next().has_value());
  loader.StartEpoch(2);  // abandons epoch 1 with batches in flight
  EXPECT_EQ(loader.Next()->size(), 4);
}

TEST(ImageLoader, RethrowsErrorsThatAreNotCorruptSamples) {
  FakeDataset data(20, {}, /*broken=*/9);
  LoaderOptions options;
  options.batch_size = 4;
  options.threads = 2;
  options.shuffle = false;
  ImageLoader loader(data, options);
  loader.StartEpoch(0);
  std::string error;
  try {
    while (loader.Next()) {
    }
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "disk on fire");
  options.batch_size = 0;
  EXPECT_THROW(ImageLoader(data, options), std::invalid_argument);
  options.batch_size = 4;
  options.rank = 2;
  options.world_size = 2;
  EXPECT_THROW(ImageLoader(data, options), std::invalid_argument);
}

// --- Subsets (train_samples / eval_samples) -------------------------------

// The parent indices a subset's samples come from, read through Get.
std::vector<int64_t> ParentIds(const ImageDataset& subset) {
  std::vector<int64_t> ids;
  std::mt19937_64 rng(0);
  uint8_t pixels[4];
  for (int64_t i = 0; i < subset.size(); ++i) {
    const int64_t label = subset.Get(i, rng, pixels);
    ids.push_back(static_cast<int64_t>(pixels[0]));
    EXPECT_EQ(label, ids.back() % 7);
  }
  return ids;
}

TEST(SpreadSubset, TakesNSamplesSpreadEvenlyOverTheParent) {
  std::unique_ptr<ImageDataset> subset =
      SpreadSubset(std::make_unique<FakeDataset>(10), 4, "train_samples");
  EXPECT_EQ(subset->size(), 4);
  EXPECT_EQ(subset->num_classes(), 7);
  EXPECT_EQ(subset->sample_shape(), (std::array<int64_t, 3>{1, 2, 2}));
  EXPECT_EQ(ParentIds(*subset), (std::vector<int64_t>{0, 2, 5, 7}));
  EXPECT_EQ(subset->Describe(3), "fake:7");
  std::mt19937_64 rng(0);
  uint8_t pixels[4];
  EXPECT_THROW(subset->Get(4, rng, pixels), std::out_of_range);
}

TEST(SpreadSubset, CoversEveryClassOfAClassSortedSet) {
  // Like a folder tree: 7 classes of 100 samples each, in class order.
  class Sorted final : public ImageDataset {
   public:
    int64_t size() const override { return 700; }
    int64_t num_classes() const override { return 7; }
    std::array<int64_t, 3> sample_shape() const override { return {1, 1, 1}; }
    int64_t Get(int64_t index, std::mt19937_64&, uint8_t* out) const override {
      out[0] = 0;
      return index / 100;
    }
    Normalization normalization() const override {
      return kImageNetNormalization;
    }
    std::string Describe(int64_t index) const override {
      return std::to_string(index);
    }
  };
  std::unique_ptr<ImageDataset> subset =
      SpreadSubset(std::make_unique<Sorted>(), 14, "eval_samples");
  std::map<int64_t, int> per_class;
  std::mt19937_64 rng(0);
  uint8_t pixel;
  for (int64_t i = 0; i < subset->size(); ++i) {
    ++per_class[subset->Get(i, rng, &pixel)];
  }
  ASSERT_EQ(per_class.size(), 7u);
  for (const auto& [label, count] : per_class) EXPECT_EQ(count, 2) << label;
}

TEST(SpreadSubset, ZeroKeepsTheWholeSetAndTooManyIsAnErrorNamingBoth) {
  auto parent = std::make_unique<FakeDataset>(10);
  const ImageDataset* raw = parent.get();
  EXPECT_EQ(SpreadSubset(std::move(parent), 0, "train_samples").get(), raw);
  EXPECT_EQ(SpreadSubset(std::make_unique<FakeDataset>(10), 10, "x")->size(),
            10);
  const std::string error = ErrorOf([] {
    SpreadSubset(std::make_unique<FakeDataset>(10), 11, "train_samples");
  });
  EXPECT_NE(error.find("train_samples 11"), std::string::npos) << error;
  EXPECT_NE(error.find("10 samples"), std::string::npos) << error;
  EXPECT_NE(ErrorOf([] {
              SpreadSubset(std::make_unique<FakeDataset>(10), -1,
                           "eval_samples");
            }).find("eval_samples -1 is negative"),
            std::string::npos);
}

// --- ImageNet-style folders ------------------------------------------------

#ifdef HPCAI500_HAVE_TURBOJPEG

// Encodes an RGB image (width x height, packed) as a quality-95 4:4:4 JPEG.
void WriteJpeg(const std::string& path, const std::vector<uint8_t>& rgb,
               int width, int height) {
  tjhandle tj = tjInitCompress();
  ASSERT_NE(tj, nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(tj, rgb.data(), width, /*pitch=*/0, height, TJPF_RGB,
                        &jpeg, &size, TJSAMP_444, /*jpegQual=*/95,
                        /*flags=*/0),
            0)
      << tjGetErrorStr2(tj);
  WriteBytes(path, std::vector<uint8_t>(jpeg, jpeg + size));
  tjFree(jpeg);
  tjDestroy(tj);
}

std::vector<uint8_t> SolidRgb(int width, int height, uint8_t r, uint8_t g,
                              uint8_t b) {
  std::vector<uint8_t> rgb;
  for (int i = 0; i < width * height; ++i) {
    rgb.insert(rgb.end(), {r, g, b});
  }
  return rgb;
}

// The mean pixel value of channel `c` of a uint8 [C, H, W] image.
float MeanPixel(const torch::Tensor& image, int c) {
  return image[c].to(torch::kFloat32).mean().item<float>();
}

// Three classes (sorted: "ant" < "bee" < "cat") of solid-colour images, image
// i coloured R = 20 + 10 * i, G = 60 * class + 30, plus a corrupt .JPEG and a
// file that is not an image.
class ImageFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<std::string> classes = {"cat", "ant", "bee"};
    const std::vector<int> sorted_label = {2, 0, 1};
    int i = 0;
    for (size_t k = 0; k < classes.size(); ++k) {
      const std::string dir = dir_.path() + "/train/" + classes[k];
      fs::create_directories(dir);
      for (int j = 0; j < 4; ++j, ++i) {
        // Sizes vary: landscape, portrait and large enough to decode at 1/8.
        const int width = j == 3 ? 300 : 40 + 8 * j;
        const int height = j == 3 ? 260 : 48 - 6 * j;
        WriteJpeg(dir + "/img" + std::to_string(j) + ".JPEG",
                  SolidRgb(width, height, 20 + 10 * i,
                           60 * sorted_label[k] + 30, 128),
                  width, height);
        red_to_label_[20 + 10 * i] = sorted_label[k];
      }
    }
    WriteBytes(dir_.path() + "/train/bee/broken.JPEG",
               {0xFF, 0xD8, 0xFF, 0x00, 'n', 'o', 'p', 'e'});
    WriteBytes(dir_.path() + "/train/bee/notes.txt", {'h', 'i'});
    fs::create_directories(dir_.path() + "/train/empty");
  }

  TempDir dir_{"image_folder"};
  std::map<int, int> red_to_label_;
};

TEST_F(ImageFolderTest, ListsClassesSortedAndOnlyJpegFiles) {
  ImageFolderOptions options;
  options.crop_size = 16;
  options.resize_size = 18;
  ImageFolderDataset data(dir_.path() + "/train", Split::kTrain, options);
  EXPECT_EQ(data.classes(), (std::vector<std::string>{"ant", "bee", "cat"}));
  EXPECT_EQ(data.num_classes(), 3);
  EXPECT_EQ(data.size(), 13);  // 12 images + broken.JPEG
  EXPECT_EQ(data.sample_shape(), (std::array<int64_t, 3>{3, 16, 16}));
}

TEST_F(ImageFolderTest, LoaderDecodesEveryImageOnceAndSkipsTheCorruptOne) {
  ImageFolderOptions options;
  options.crop_size = 16;
  options.resize_size = 18;
  ImageFolderDataset data(dir_.path() + "/train", Split::kTrain, options);
  std::vector<std::string> warnings;
  LoaderOptions loader_options;
  loader_options.batch_size = 4;
  loader_options.threads = 3;
  loader_options.seed = 9;
  std::mutex warnings_mu;
  loader_options.warn = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(warnings_mu);
    warnings.push_back(line);
  };
  ImageLoader loader(data, loader_options);
  std::vector<std::vector<int>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    loader.StartEpoch(epoch);
    std::vector<int> reds;
    while (auto batch = loader.Next()) {
      ASSERT_EQ(batch->images.dim(), 4);
      EXPECT_EQ(batch->images.sizes().slice(1),
                torch::IntArrayRef({3, 16, 16}));
      EXPECT_TRUE(batch->images.is_contiguous());
      EXPECT_EQ(batch->images.scalar_type(), torch::kUInt8);
      ASSERT_TRUE(batch->normalization.has_value());
      EXPECT_EQ(batch->normalization->mean, kImageNetNormalization.mean);
      for (int64_t i = 0; i < batch->size(); ++i) {
        torch::Tensor image = batch->images[i];
        const int red = std::lround(MeanPixel(image, 0));
        // Solid colours survive JPEG, scaling and the crop within a level
        // or two; snap to the nearest written red.
        const int snapped = 20 + 10 * std::lround((red - 20) / 10.0);
        EXPECT_NEAR(red, snapped, 3);
        ASSERT_EQ(red_to_label_.count(snapped), 1u) << red;
        EXPECT_EQ(batch->labels[i].item<int64_t>(), red_to_label_[snapped]);
        EXPECT_NEAR(MeanPixel(image, 1), 60 * red_to_label_[snapped] + 30, 3);
        EXPECT_NEAR(MeanPixel(image, 2), 128, 3);
        reds.push_back(snapped);
      }
    }
    std::vector<int> sorted = reds;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> expected;
    for (int i = 0; i < 12; ++i) expected.push_back(20 + 10 * i);
    EXPECT_EQ(sorted, expected) << "epoch " << epoch;
    orders.push_back(reds);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_EQ(loader.corrupt_samples(), 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("broken.JPEG"), std::string::npos) << warnings[0];
}

// A horizontal ramp (R = 4x) through resize-to-32 + centre-crop-16: output
// column ox shows source column 20 + (ox + 0.5) * 1.5 - 0.5.
TEST_F(ImageFolderTest, EvaluationResizesAndCentreCrops) {
  const std::string dir = dir_.path() + "/val/ramp";
  fs::create_directories(dir);
  std::vector<uint8_t> rgb;
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 64; ++x) rgb.insert(rgb.end(), {uint8_t(4 * x), 0, 0});
  }
  WriteJpeg(dir + "/ramp.jpg", rgb, 64, 48);
  ImageFolderOptions options;
  options.crop_size = 16;
  options.resize_size = 32;
  ImageFolderDataset data(dir_.path() + "/val", Split::kEval, options);
  std::vector<uint8_t> out(3 * 16 * 16);
  std::mt19937_64 rng(1);
  EXPECT_EQ(data.Get(0, rng, out.data()), 0);
  for (int ox = 0; ox < 16; ++ox) {
    const double source_x = 20 + (ox + 0.5) * 1.5 - 0.5;
    EXPECT_NEAR(out[8 * 16 + ox], 4 * source_x, 8) << ox;
  }
}

TEST_F(ImageFolderTest, TrainingFlipsAboutHalfTheTime) {
  const std::string dir = dir_.path() + "/flip/ramp";
  fs::create_directories(dir);
  std::vector<uint8_t> rgb;
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 64; ++x) rgb.insert(rgb.end(), {uint8_t(4 * x), 0, 0});
  }
  WriteJpeg(dir + "/ramp.jpg", rgb, 64, 48);
  ImageFolderOptions options;
  options.crop_size = 16;
  options.min_scale = options.max_scale = 1.0;
  options.min_ratio = options.max_ratio = 64.0 / 48.0;  // the whole image
  ImageFolderDataset data(dir_.path() + "/flip", Split::kTrain, options);
  std::vector<uint8_t> out(3 * 16 * 16);
  int flipped = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::mt19937_64 rng(seed);
    data.Get(0, rng, out.data());
    const float left = out[8 * 16], right = out[8 * 16 + 15];
    EXPECT_GT(std::abs(right - left), 150);
    if (left > right) ++flipped;
  }
  EXPECT_GT(flipped, 8);
  EXPECT_LT(flipped, 32);
}

TEST(ImageFolderDataset, RejectsMissingOrEmptyFolders) {
  TempDir dir("image_folder_empty");
  EXPECT_NE(ErrorOf([&] {
              ImageFolderDataset(dir.path() + "/nope", Split::kTrain);
            }).find("not a directory"),
            std::string::npos);
  fs::create_directories(dir.path() + "/a");
  EXPECT_NE(ErrorOf([&] {
              ImageFolderDataset(dir.path(), Split::kTrain);
            }).find("no <class>/*.JPEG"),
            std::string::npos);
}

#else  // !HPCAI500_HAVE_TURBOJPEG

TEST(ImageFolderDataset, WithoutLibjpegTurboSaysSo) {
  TempDir dir("image_folder_none");
  EXPECT_NE(ErrorOf([&] {
              ImageFolderDataset(dir.path(), Split::kTrain);
            }).find("without libjpeg-turbo"),
            std::string::npos);
}

#endif  // HPCAI500_HAVE_TURBOJPEG

}  // namespace
}  // namespace hpcai500::worker
