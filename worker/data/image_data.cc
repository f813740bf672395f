#include "worker/data/image_data.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <utility>

#ifdef HPCAI500_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

namespace hpcai500::worker {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kCifarImageBytes = kCifarRecordBytes - 1;
constexpr int64_t kCifarSide = 32;
constexpr int64_t kCifarPad = 4;

// One read of the file's size: --gpu-decode reads thousands a second, and a
// stream iterator copied them a byte at a time.
std::vector<uint8_t> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error("error reading " + path);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) {
    throw std::runtime_error("error reading " + path);
  }
  return bytes;
}

int64_t UniformInt(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool HasJpegExtension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg";
}

std::vector<std::string> CifarFiles(const std::string& dir, Split split) {
  if (split == Split::kEval) return {dir + "/test_batch.bin"};
  std::vector<std::string> files;
  for (int i = 1; i <= 5; ++i) {
    files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  }
  return files;
}

}  // namespace

// --- CIFAR-10 --------------------------------------------------------------

Cifar10Dataset::Cifar10Dataset(const std::string& dir, Split split)
    : Cifar10Dataset(CifarFiles(dir, split), split) {}

Cifar10Dataset::Cifar10Dataset(const std::vector<std::string>& files,
                               Split split)
    : split_(split) {
  for (const std::string& path : files) {
    const std::vector<uint8_t> bytes = ReadWholeFile(path);
    const int64_t n = static_cast<int64_t>(bytes.size());
    if (n == 0 || n % kCifarRecordBytes != 0) {
      throw std::runtime_error(
          "CIFAR-10 file " + path + " holds " + std::to_string(n) +
          " bytes, not a whole number of " + std::to_string(kCifarRecordBytes) +
          "-byte records (truncated?)");
    }
    for (int64_t r = 0; r < n / kCifarRecordBytes; ++r) {
      const uint8_t* record = bytes.data() + r * kCifarRecordBytes;
      if (record[0] > 9) {
        throw std::runtime_error("CIFAR-10 file " + path + " record " +
                                 std::to_string(r) + " has label " +
                                 std::to_string(record[0]) + " (expected 0-9)");
      }
      labels_.push_back(record[0]);
      pixels_.insert(pixels_.end(), record + 1, record + kCifarRecordBytes);
    }
  }
  if (labels_.empty()) throw std::runtime_error("CIFAR-10: no files given");
}

int64_t Cifar10Dataset::Get(int64_t index, std::mt19937_64& rng,
                            uint8_t* out) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("CIFAR-10 index " + std::to_string(index));
  }
  int64_t dx = 0, dy = 0;
  bool flip = false;
  if (split_ == Split::kTrain) {
    dx = UniformInt(rng, -kCifarPad, kCifarPad);
    dy = UniformInt(rng, -kCifarPad, kCifarPad);
    flip = UniformInt(rng, 0, 1) == 1;
  }
  const uint8_t* image = pixels_.data() + index * kCifarImageBytes;
  const int64_t plane = kCifarSide * kCifarSide;
  for (int c = 0; c < 3; ++c) {
    for (int64_t y = 0; y < kCifarSide; ++y) {
      for (int64_t x = 0; x < kCifarSide; ++x) {
        const int64_t sy = y + dy;
        const int64_t sx = (flip ? kCifarSide - 1 - x : x) + dx;
        const bool inside =
            sy >= 0 && sy < kCifarSide && sx >= 0 && sx < kCifarSide;
        out[c * plane + y * kCifarSide + x] =
            inside ? image[c * plane + sy * kCifarSide + sx] : 0;
      }
    }
  }
  return labels_[index];
}

std::string Cifar10Dataset::Describe(int64_t index) const {
  return std::string("cifar10:") +
         (split_ == Split::kTrain ? "train:" : "test:") + std::to_string(index);
}

// --- Crops and decode scale ------------------------------------------------

CropBox RandomResizedCropBox(int64_t width, int64_t height,
                             const ImageFolderOptions& options,
                             std::mt19937_64& rng) {
  const double area = static_cast<double>(width) * height;
  std::uniform_real_distribution<double> scale(options.min_scale,
                                               options.max_scale);
  std::uniform_real_distribution<double> log_ratio(std::log(options.min_ratio),
                                                   std::log(options.max_ratio));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * scale(rng);
    const double ratio = std::exp(log_ratio(rng));
    const int64_t w = std::llround(std::sqrt(target_area * ratio));
    const int64_t h = std::llround(std::sqrt(target_area / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      return {UniformInt(rng, 0, width - w), UniformInt(rng, 0, height - h), w,
              h};
    }
  }
  // Fallback: the whole image, clamped to the ratio range, centred.
  const double in_ratio = static_cast<double>(width) / height;
  int64_t w = width, h = height;
  if (in_ratio < options.min_ratio) {
    h = std::llround(w / options.min_ratio);
  } else if (in_ratio > options.max_ratio) {
    w = std::llround(h * options.max_ratio);
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

std::pair<int, int> ChooseDecodeScale(const CropBox& crop, int64_t min_width,
                                      int64_t min_height) {
  // libjpeg-turbo scales by k/8 during the inverse DCT; try the smallest.
  for (int k = 1; k < 8; ++k) {
    if (crop.width * k >= min_width * 8 && crop.height * k >= min_height * 8) {
      return {k, 8};
    }
  }
  return {1, 1};
}

SamplePlan PlanSample(Split split, int64_t width, int64_t height,
                      const ImageFolderOptions& options, std::mt19937_64& rng) {
  SamplePlan plan;
  if (split == Split::kTrain) {
    plan.crop = RandomResizedCropBox(width, height, options, rng);
    plan.flip = options.flip && UniformInt(rng, 0, 1) == 1;
    return plan;
  }
  // Shorter side to resize_size, then the centre crop_size square.
  const double side = static_cast<double>(options.crop_size) *
                      std::min(width, height) / options.resize_size;
  CropBox& crop = plan.crop;
  crop.width = crop.height = std::max<int64_t>(1, std::llround(side));
  crop.width = std::min<int64_t>(crop.width, width);
  crop.height = std::min<int64_t>(crop.height, height);
  crop.x = (width - crop.width) / 2;
  crop.y = (height - crop.height) / 2;
  return plan;
}

// --- ImageNet-style folders ------------------------------------------------

ImageFolderDataset::ImageFolderDataset(const std::string& root, Split split,
                                       ImageFolderOptions options)
    : split_(split), options_(std::move(options)) {
#ifndef HPCAI500_HAVE_TURBOJPEG
  throw std::runtime_error(
      "image folder " + root +
      ": this worker was built without libjpeg-turbo (install "
      "libturbojpeg0-dev and reconfigure) and cannot decode JPEG");
#endif
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw std::runtime_error("image folder " + root + " is not a directory");
  }
  std::vector<fs::path> class_dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) class_dirs.push_back(entry.path());
  }
  std::sort(class_dirs.begin(), class_dirs.end());
  for (const fs::path& dir : class_dirs) {
    std::vector<std::string> images;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && HasJpegExtension(entry.path())) {
        images.push_back(entry.path().string());
      }
    }
    if (images.empty()) continue;
    std::sort(images.begin(), images.end());
    const int64_t label = classes_.size();
    classes_.push_back(dir.filename().string());
    for (std::string& image : images) {
      files_.push_back(std::move(image));
      labels_.push_back(label);
    }
  }
  if (files_.empty()) {
    throw std::runtime_error("image folder " + root +
                             " holds no <class>/*.JPEG images");
  }
}

#ifdef HPCAI500_HAVE_TURBOJPEG
namespace {

// One TurboJPEG decompressor per thread (handles are not thread-safe).
tjhandle ThreadDecompressor() {
  struct Handle {
    tjhandle h = tjInitDecompress();
    ~Handle() {
      if (h != nullptr) tjDestroy(h);
    }
  };
  thread_local Handle handle;
  if (handle.h == nullptr) {
    throw std::runtime_error("tjInitDecompress failed");
  }
  return handle.h;
}

}  // namespace
#endif

int64_t ImageFolderDataset::Get(int64_t index, std::mt19937_64& rng,
                                uint8_t* out) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("image index " + std::to_string(index));
  }
#ifdef HPCAI500_HAVE_TURBOJPEG
  const std::string& path = files_[index];
  std::vector<uint8_t> bytes;
  try {
    bytes = ReadWholeFile(path);
  } catch (const std::runtime_error& e) {
    throw CorruptSample(e.what());
  }
  tjhandle tj = ThreadDecompressor();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, bytes.data(), bytes.size(), &width, &height,
                          &subsampling, &colorspace) != 0) {
    throw CorruptSample(std::string("not a JPEG: ") + tjGetErrorStr2(tj));
  }
  if (width <= 0 || height <= 0) throw CorruptSample("empty JPEG");

  // The region of the full-size image that becomes the output square.
  const int64_t size = options_.crop_size;
  const SamplePlan plan = PlanSample(split_, width, height, options_, rng);
  const CropBox& crop = plan.crop;
  const auto [num, denom] = ChooseDecodeScale(crop, size, size);
  const tjscalingfactor factor{num, denom};
  const int scaled_w = TJSCALED(width, factor);
  const int scaled_h = TJSCALED(height, factor);
  thread_local std::vector<uint8_t> rgb;
  rgb.resize(static_cast<size_t>(scaled_w) * scaled_h * 3);
  if (tjDecompress2(tj, bytes.data(), bytes.size(), rgb.data(), scaled_w,
                    /*pitch=*/0, scaled_h, TJPF_RGB, /*flags=*/0) != 0 &&
      tjGetErrorCode(tj) != TJERR_WARNING) {
    throw CorruptSample(std::string("JPEG decode failed: ") +
                        tjGetErrorStr2(tj));
  }
  const double sx = static_cast<double>(scaled_w) / width;
  const double sy = static_cast<double>(scaled_h) / height;
  ResampleToChwPixels(rgb.data(), scaled_w, scaled_h, crop.x * sx, crop.y * sy,
                      crop.width * sx, crop.height * sy, size, plan.flip, out);
  return labels_[index];
#else
  (void)rng;
  (void)out;
  throw std::runtime_error("built without libjpeg-turbo");
#endif
}

EncodedSample ImageFolderDataset::ReadEncoded(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("image index " + std::to_string(index));
  }
  try {
    return {ReadWholeFile(files_[index]), labels_[index]};
  } catch (const std::runtime_error& e) {
    throw CorruptSample(e.what());
  }
}

EncodedSample ImageDataset::ReadEncoded(int64_t /*index*/) const {
  throw std::logic_error("this data set's samples are not JPEG files");
}

// --- Synthetic -------------------------------------------------------------

SyntheticImages::SyntheticImages(int64_t batch_size,
                                 std::array<int64_t, 3> shape,
                                 int64_t num_classes, uint64_t seed,
                                 const torch::Device& device) {
  if (batch_size < 1 || num_classes < 1 || shape[0] < 1 || shape[1] < 1 ||
      shape[2] < 1) {
    throw std::invalid_argument(
        "synthetic data needs batch_size, num_classes and shape >= 1");
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  images_ =
      torch::randn({batch_size, shape[0], shape[1], shape[2]}, gen).to(device);
  labels_ = torch::randint(num_classes, {batch_size}, gen,
                           torch::TensorOptions(torch::kInt64))
                .to(device);
}

namespace {

// The samples of a parent data set at `indices`.
class IndexedSubset final : public ImageDataset {
 public:
  IndexedSubset(std::unique_ptr<ImageDataset> parent,
                std::vector<int64_t> indices)
      : parent_(std::move(parent)), indices_(std::move(indices)) {}

  int64_t size() const override { return indices_.size(); }
  int64_t num_classes() const override { return parent_->num_classes(); }
  std::array<int64_t, 3> sample_shape() const override {
    return parent_->sample_shape();
  }
  int64_t Get(int64_t index, std::mt19937_64& rng,
              uint8_t* out) const override {
    return parent_->Get(ParentIndex(index), rng, out);
  }
  Normalization normalization() const override {
    return parent_->normalization();
  }
  std::string Describe(int64_t index) const override {
    return parent_->Describe(ParentIndex(index));
  }
  const ImageFolderOptions* jpeg_options() const override {
    return parent_->jpeg_options();
  }
  EncodedSample ReadEncoded(int64_t index) const override {
    return parent_->ReadEncoded(ParentIndex(index));
  }

 private:
  int64_t ParentIndex(int64_t index) const {
    if (index < 0 || index >= size()) {
      throw std::out_of_range("sample " + std::to_string(index) +
                              " of a subset of " + std::to_string(size()));
    }
    return indices_[index];
  }

  // Constant after construction.
  const std::unique_ptr<ImageDataset> parent_;
  const std::vector<int64_t> indices_;
};

}  // namespace

std::unique_ptr<ImageDataset> SpreadSubset(
    std::unique_ptr<ImageDataset> dataset, int64_t n, const std::string& what) {
  const int64_t size = dataset->size();
  if (n < 0 || n > size) {
    throw std::invalid_argument(
        what + " " + std::to_string(n) +
        (n < 0
             ? " is negative"
             : " exceeds the data set's " + std::to_string(size) + " samples"));
  }
  if (n == 0) return dataset;
  std::vector<int64_t> indices(n);
  for (int64_t i = 0; i < n; ++i) {
    indices[i] = i * size / n;  // no overflow below 2^31 samples
  }
  return std::make_unique<IndexedSubset>(std::move(dataset),
                                         std::move(indices));
}

}  // namespace hpcai500::worker
