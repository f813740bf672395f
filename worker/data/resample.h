// Bilinear resampling of a region of a packed RGB image to a square, the last
// step of every JPEG sample: the CPU decoder threads (ImageFolderDataset,
// worker/data/image_data.h) run ResampleToChwPixels per image (uint8, rounded
// as PIL's resize rounds; normalised later, on the device), ResampleToChw is
// the same resampling normalised and unrounded, and --gpu-decode
// (worker/data/batch_resample.h) builds the same taps for a whole batch so
// that all of them sample the same source pixels with the same weights.
// Standard library only.
//
// Thread-safe: pure functions.
#ifndef HPCAI500_WORKER_DATA_RESAMPLE_H_
#define HPCAI500_WORKER_DATA_RESAMPLE_H_

#include <array>
#include <cstdint>
#include <vector>

namespace hpcai500::worker {

// Per-channel normalisation applied after scaling pixels to [0, 1].
struct Normalization {
  std::array<float, 3> mean;
  std::array<float, 3> std;
};
inline constexpr Normalization kImageNetNormalization{{0.485f, 0.456f, 0.406f},
                                                      {0.229f, 0.224f, 0.225f}};
inline constexpr Normalization kCifar10Normalization{
    {0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};

// Normalisation as one multiply-add per value: out[c] = pixel * scale[c] +
// bias[c] = (pixel / 255 - mean[c]) / std[c].
struct Normalizer {
  explicit Normalizer(const Normalization& n);
  std::array<float, 3> scale, bias;
};

// One axis of a bilinear resampling: for each output pixel, the two source
// pixels and the weight of the second.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<float> weight;
};

// Output pixel i of `n` samples source coordinate start + (i + 0.5) * extent
// / n - 0.5 (pixel centres aligned, as PIL and torchvision do), clamped to
// [0, limit - 1]; `reverse` mirrors the output (a horizontal flip).
Taps BilinearTaps(double start, double extent, int64_t n, int64_t limit,
                  bool reverse);

// Resamples the region [x0, x0 + w) x [y0, y0 + h) (in pixels of the packed
// RGB image `rgb`, width x height) to size x size, optionally mirrored, and
// writes it normalised in CHW order to `out` (3 * size * size floats).
void ResampleToChw(const uint8_t* rgb, int64_t width, int64_t height, double x0,
                   double y0, double w, double h, int64_t size, bool flip,
                   const Normalizer& norm, float* out);

// The same resampling, each value rounded to the nearest uint8 level instead
// of normalised: writes 3 * size * size pixels in CHW order to `out`. Differs
// from ResampleToChw's values, unnormalised, by at most half a level.
void ResampleToChwPixels(const uint8_t* rgb, int64_t width, int64_t height,
                         double x0, double y0, double w, double h, int64_t size,
                         bool flip, uint8_t* out);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_RESAMPLE_H_
