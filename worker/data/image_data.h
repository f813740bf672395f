// Random-access image sample stores (ImageDataset: one sample by index, safe
// to read from many decoder threads), which ImageLoader
// (worker/data/image_loader.h) turns into batches of a rank's shard. The
// trainer never sees these: OpenDataset (worker/data/open_dataset.h) puts a
// loader behind the Dataset interface.
// - Cifar10Dataset: CIFAR-10's binary batches (1 label byte + 3072 bytes of
//   R, G, B planes per record), held in memory as uint8.
// - ImageFolderDataset: an ImageNet-style tree (<root>/<class>/*.JPEG, classes
//   sorted by name) decoded with libjpeg-turbo at reduced scale where the crop
//   allows; random-resized-crop + flip for training, resize + center crop for
//   evaluation. Needs HPCAI500_HAVE_TURBOJPEG, else its constructor throws.
// - SyntheticImages: one fixed random batch on a device, for throughput only.
//
// Samples come out as uint8 pixels [C, H, W] with the normalisation their
// data set applies to them; the normalising happens a batch at a time, on
// the run's device (ImagesOn, worker/data/device_input.h), so that a batch
// crosses to the GPU at a quarter of float's bytes.
#ifndef HPCAI500_WORKER_DATA_IMAGE_DATA_H_
#define HPCAI500_WORKER_DATA_IMAGE_DATA_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/data/resample.h"

namespace hpcai500::worker {

// Thrown by ImageDataset::Get for a sample that cannot be decoded; the loader
// counts it and skips the sample.
class CorruptSample : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ImageFolderOptions;

// A sample's file as stored (a JPEG) and its label, for a decoder outside
// the data set (--gpu-decode).
struct EncodedSample {
  std::vector<uint8_t> bytes;
  int64_t label = 0;
};

// A random-access set of labelled images.
// Thread-safe: Get may run on many threads at once.
class ImageDataset {
 public:
  virtual ~ImageDataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t num_classes() const = 0;
  // {C, H, W} of every sample Get writes.
  virtual std::array<int64_t, 3> sample_shape() const = 0;
  // Writes sample `index` (in [0, size())), augmented with randomness drawn
  // from `rng`, as uint8 pixels into `out` (C*H*W, CHW order) and returns
  // its label. Throws CorruptSample when the sample's bytes cannot be
  // decoded, std::out_of_range for a bad index.
  virtual int64_t Get(int64_t index, std::mt19937_64& rng,
                      uint8_t* out) const = 0;
  // The per-channel mean and standard deviation (of pixels / 255) that turn
  // Get's pixels into the model's input (ImagesOn, for 3-channel samples).
  virtual Normalization normalization() const = 0;
  // A name for sample `index` in warnings (a file path, or set:index).
  virtual std::string Describe(int64_t index) const = 0;
  // Non-null when every sample is a JPEG file that ReadEncoded returns, and
  // Get would crop it as these options say; borrowed for the data set's
  // lifetime. Null (the default): samples are not JPEG files.
  virtual const ImageFolderOptions* jpeg_options() const { return nullptr; }
  // Sample `index`'s file bytes and label, where jpeg_options() is non-null.
  // Throws CorruptSample when the file cannot be read, std::logic_error
  // where jpeg_options() is null.
  virtual EncodedSample ReadEncoded(int64_t index) const;
};

enum class Split { kTrain, kEval };

inline constexpr int64_t kCifarRecordBytes = 1 + 3 * 32 * 32;

// CIFAR-10 from `dir` holding data_batch_1.bin .. data_batch_5.bin (train)
// or test_batch.bin (eval). Training samples are augmented the usual way
// (4-pixel zero padding, random 32x32 crop, horizontal flip); evaluation
// samples are not. Output [3, 32, 32], 10 classes.
class Cifar10Dataset final : public ImageDataset {
 public:
  // Throws std::runtime_error naming the file that is missing, is not a whole
  // number of 3073-byte records, or holds a label above 9.
  Cifar10Dataset(const std::string& dir, Split split);
  // Reads the given files in order (the constructor above uses the standard
  // names); same errors.
  Cifar10Dataset(const std::vector<std::string>& files, Split split);

  int64_t size() const override { return labels_.size(); }
  int64_t num_classes() const override { return 10; }
  std::array<int64_t, 3> sample_shape() const override { return {3, 32, 32}; }
  int64_t Get(int64_t index, std::mt19937_64& rng, uint8_t* out) const override;
  Normalization normalization() const override { return kCifar10Normalization; }
  std::string Describe(int64_t index) const override;

 private:
  // Constant after construction.
  Split split_;
  std::vector<uint8_t> pixels_;  // N x 3072, R, G, B planes
  std::vector<uint8_t> labels_;
};

struct ImageFolderOptions {
  int64_t crop_size = 224;    // output height and width
  int64_t resize_size = 256;  // eval: shorter side before the center crop
  double min_scale = 0.08;    // train: random-resized-crop area range
  double max_scale = 1.0;
  double min_ratio = 3.0 / 4.0;  // train: aspect ratio range
  double max_ratio = 4.0 / 3.0;
  bool flip = true;  // train: horizontal flip with probability 1/2
  Normalization normalization = kImageNetNormalization;
};

// <root>/<class>/<file> for every regular file whose extension is .jpeg or
// .jpg (any case); class index = rank of the folder name in sorted order.
// Training (Split::kTrain) applies torchvision's RandomResizedCrop (area
// scale, ratio, bilinear) and a horizontal flip; evaluation resizes the
// shorter side to resize_size and takes the center crop_size square. Output
// [3, crop_size, crop_size], each pixel the bilinear blend rounded to the
// nearest level (ResampleToChwPixels).
class ImageFolderDataset final : public ImageDataset {
 public:
  // Throws std::runtime_error when libjpeg-turbo was not built in, `root` is
  // not a directory, or it holds no class folder with an image.
  ImageFolderDataset(const std::string& root, Split split,
                     ImageFolderOptions options = {});

  int64_t size() const override { return files_.size(); }
  int64_t num_classes() const override { return classes_.size(); }
  std::array<int64_t, 3> sample_shape() const override {
    return {3, options_.crop_size, options_.crop_size};
  }
  int64_t Get(int64_t index, std::mt19937_64& rng, uint8_t* out) const override;
  Normalization normalization() const override {
    return options_.normalization;
  }
  std::string Describe(int64_t index) const override { return files_[index]; }
  const ImageFolderOptions* jpeg_options() const override { return &options_; }
  EncodedSample ReadEncoded(int64_t index) const override;
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  // Constant after construction.
  Split split_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_;
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

// `n` samples of `dataset` spread evenly over its index range (sample i is
// the parent's floor(i * size / n)), so a subset of a class-sorted folder
// tree still holds every class in proportion; the train_samples /
// eval_samples knob of a config. Returns `dataset` itself when n is 0.
// Throws std::invalid_argument naming `what` (e.g. "train_samples"), n and
// the size when n < 0 or n exceeds the size. The result owns `dataset`;
// thread-safe as the parent is.
std::unique_ptr<ImageDataset> SpreadSubset(
    std::unique_ptr<ImageDataset> dataset, int64_t n, const std::string& what);

// A region of a width x height image, in pixels.
struct CropBox {
  int64_t x = 0, y = 0, width = 0, height = 0;
};

// torchvision's RandomResizedCrop.get_params: up to 10 draws of an area in
// [min_scale, max_scale] of the image and a log-uniform aspect ratio, else
// the center crop clamped to the ratio range.
CropBox RandomResizedCropBox(int64_t width, int64_t height,
                             const ImageFolderOptions& options,
                             std::mt19937_64& rng);

// How one sample becomes the output square: the region of the full-size
// image to resample, and whether to mirror it.
struct SamplePlan {
  CropBox crop;
  bool flip = false;
};

// The plan of a width x height image of `split`: training draws
// RandomResizedCropBox and then (with options.flip) a fair coin from `rng`;
// evaluation takes the centre square that is crop_size of a shorter side
// resized to resize_size, drawing nothing. ImageFolderDataset::Get and
// --gpu-decode both plan with this, so that for the same generator state
// they crop and flip alike.
SamplePlan PlanSample(Split split, int64_t width, int64_t height,
                      const ImageFolderOptions& options, std::mt19937_64& rng);

// The largest libjpeg-turbo reduction (num/denom <= 1 among the library's
// scaling factors) at which a `crop` region of the full image still covers
// at least `min_width` x `min_height` pixels, as {num, denom}; {1, 1} when
// none smaller does.
std::pair<int, int> ChooseDecodeScale(const CropBox& crop, int64_t min_width,
                                      int64_t min_height);

// Random tensors standing in for data: one batch of `batch_size` images of
// `shape` ({C, H, W}) with labels in [0, num_classes), drawn once from `seed`
// and made on `device`. For throughput only: it learns nothing.
// Thread-safe: immutable after construction.
class SyntheticImages {
 public:
  SyntheticImages(int64_t batch_size, std::array<int64_t, 3> shape,
                  int64_t num_classes, uint64_t seed,
                  const torch::Device& device);
  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }

 private:
  torch::Tensor images_;  // float [B, C, H, W] on the device
  torch::Tensor labels_;  // int64 [B] on the device
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_IMAGE_DATA_H_
