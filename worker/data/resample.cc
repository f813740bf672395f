#include "worker/data/resample.h"

#include <algorithm>
#include <cmath>

namespace hpcai500::worker {

Normalizer::Normalizer(const Normalization& n) {
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * n.std[c]);
    bias[c] = -n.mean[c] / n.std[c];
  }
}

Taps BilinearTaps(double start, double extent, int64_t n, int64_t limit,
                  bool reverse) {
  Taps t;
  t.lo.resize(n);
  t.hi.resize(n);
  t.weight.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    double s = start + (static_cast<double>(i) + 0.5) * extent / n - 0.5;
    s = std::clamp(s, 0.0, static_cast<double>(limit - 1));
    const int64_t lo = static_cast<int64_t>(std::floor(s));
    const int64_t at = reverse ? n - 1 - i : i;
    t.lo[at] = lo;
    t.hi[at] = std::min(lo + 1, limit - 1);
    t.weight[at] = static_cast<float>(s - lo);
  }
  return t;
}

namespace {

// Bilinear resampling as ResampleToChw describes it, handing each output
// value v (in [0, 255]) of channel c to store(CHW offset, c, v).
template <typename Store>
void Resample(const uint8_t* rgb, int64_t width, int64_t height, double x0,
              double y0, double w, double h, int64_t size, bool flip,
              Store store) {
  const Taps xs = BilinearTaps(x0, w, size, width, flip);
  const Taps ys = BilinearTaps(y0, h, size, height, /*reverse=*/false);
  const int64_t plane = size * size;
  std::vector<float> row(static_cast<size_t>(width) * 3);
  for (int64_t oy = 0; oy < size; ++oy) {
    const uint8_t* top = rgb + ys.lo[oy] * width * 3;
    const uint8_t* bottom = rgb + ys.hi[oy] * width * 3;
    const float wy = ys.weight[oy];
    // Blend the two source rows only over the columns the taps touch.
    const int64_t first = std::min(xs.lo.front(), xs.lo.back());
    const int64_t last = std::max(xs.hi.front(), xs.hi.back());
    for (int64_t k = first * 3; k < (last + 1) * 3; ++k) {
      row[k] = top[k] + wy * (static_cast<float>(bottom[k]) - top[k]);
    }
    for (int64_t ox = 0; ox < size; ++ox) {
      const float* a = &row[xs.lo[ox] * 3];
      const float* b = &row[xs.hi[ox] * 3];
      const float wx = xs.weight[ox];
      for (int c = 0; c < 3; ++c) {
        store(c * plane + oy * size + ox, c, a[c] + wx * (b[c] - a[c]));
      }
    }
  }
}

}  // namespace

void ResampleToChw(const uint8_t* rgb, int64_t width, int64_t height, double x0,
                   double y0, double w, double h, int64_t size, bool flip,
                   const Normalizer& norm, float* out) {
  Resample(rgb, width, height, x0, y0, w, h, size, flip,
           [&norm, out](int64_t at, int c, float v) {
             out[at] = v * norm.scale[c] + norm.bias[c];
           });
}

void ResampleToChwPixels(const uint8_t* rgb, int64_t width, int64_t height,
                         double x0, double y0, double w, double h, int64_t size,
                         bool flip, uint8_t* out) {
  Resample(rgb, width, height, x0, y0, w, h, size, flip,
           [out](int64_t at, int /*c*/, float v) {
             // v is a blend of levels in [0, 255]; clamp its rounding error.
             out[at] = static_cast<uint8_t>(std::clamp(v + 0.5f, 0.0f, 255.0f));
           });
}

}  // namespace hpcai500::worker
