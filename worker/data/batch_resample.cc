#include "worker/data/batch_resample.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "worker/data/resample.h"

namespace hpcai500::worker {

namespace {

void CheckLayout(const torch::Tensor& pixels,
                 const std::vector<PackedImage>& images,
                 const std::vector<SamplePlan>& plans, int64_t size) {
  if (pixels.scalar_type() != torch::kUInt8 || pixels.dim() != 1) {
    throw std::invalid_argument("resample: pixels must be 1-D uint8");
  }
  if (images.size() != plans.size() || size < 1) {
    throw std::invalid_argument("resample: " + std::to_string(images.size()) +
                                " images, " + std::to_string(plans.size()) +
                                " plans, size " + std::to_string(size));
  }
  for (size_t b = 0; b < images.size(); ++b) {
    const PackedImage& im = images[b];
    const CropBox& crop = plans[b].crop;
    const bool inside = im.width > 0 && im.height > 0 && im.offset >= 0 &&
                        im.offset + im.width * im.height * 3 <= pixels.numel();
    const bool crop_inside = crop.width > 0 && crop.height > 0 && crop.x >= 0 &&
                             crop.y >= 0 && crop.x + crop.width <= im.width &&
                             crop.y + crop.height <= im.height;
    if (!inside || !crop_inside) {
      throw std::invalid_argument(
          "resample: image " + std::to_string(b) + " (" +
          std::to_string(im.width) + "x" + std::to_string(im.height) + " at " +
          std::to_string(im.offset) + ") or its crop lies outside its bounds");
    }
  }
}

}  // namespace

torch::Tensor ResampleBatch(const torch::Tensor& pixels,
                            const std::vector<PackedImage>& images,
                            const std::vector<SamplePlan>& plans, int64_t size,
                            const Normalization& normalization) {
  CheckLayout(pixels, images, plans, size);
  const int64_t n = images.size();
  // Per image and output row: the byte offsets of the two source rows and
  // the weight of the second; per output column: the byte offsets of the
  // two source pixels within a row and the weight of the second. The same
  // taps as ResampleToChw's, mirrored alike.
  torch::Tensor row_lo = torch::empty({n, size}, torch::kInt64);
  torch::Tensor row_hi = torch::empty({n, size}, torch::kInt64);
  torch::Tensor col_lo = torch::empty({n, size}, torch::kInt64);
  torch::Tensor col_hi = torch::empty({n, size}, torch::kInt64);
  torch::Tensor wy = torch::empty({n, size}, torch::kFloat32);
  torch::Tensor wx = torch::empty({n, size}, torch::kFloat32);
  for (int64_t b = 0; b < n; ++b) {
    const PackedImage& im = images[b];
    const CropBox& crop = plans[b].crop;
    const Taps xs =
        BilinearTaps(crop.x, crop.width, size, im.width, plans[b].flip);
    const Taps ys =
        BilinearTaps(crop.y, crop.height, size, im.height, /*reverse=*/false);
    int64_t* rl = row_lo[b].data_ptr<int64_t>();
    int64_t* rh = row_hi[b].data_ptr<int64_t>();
    int64_t* cl = col_lo[b].data_ptr<int64_t>();
    int64_t* ch = col_hi[b].data_ptr<int64_t>();
    float* fy = wy[b].data_ptr<float>();
    float* fx = wx[b].data_ptr<float>();
    for (int64_t i = 0; i < size; ++i) {
      rl[i] = im.offset + ys.lo[i] * im.width * 3;
      rh[i] = im.offset + ys.hi[i] * im.width * 3;
      fy[i] = ys.weight[i];
      cl[i] = xs.lo[i] * 3;
      ch[i] = xs.hi[i] * 3;
      fx[i] = xs.weight[i];
    }
  }
  const torch::Device device = pixels.device();
  // Byte offsets fit 32 bits for any batch below 2 GiB of pixels, which
  // halves the index tensors (the largest this function makes).
  const auto index_type = pixels.numel() <= std::numeric_limits<int32_t>::max()
                              ? torch::kInt32
                              : torch::kInt64;
  // Every host tensor goes up from pinned memory, without blocking: a
  // pageable copy would wait for the stream, and with it for the decode.
  auto upload = [&](const torch::Tensor& t, torch::ScalarType type) {
    torch::Tensor host = t.to(type);
    if (device.is_cuda()) host = host.pin_memory();
    return host.to(device, /*non_blocking=*/true);
  };
  const torch::Tensor channel =
      torch::arange(3, torch::TensorOptions(index_type).device(device))
          .view({1, 3, 1, 1});
  // [n, 1, size, 1] rows and [n, 1, 1, size] columns broadcast to
  // [n, 3, size, size] byte offsets.
  const torch::Tensor rows_lo =
      upload(row_lo, index_type).view({n, 1, size, 1}) + channel;
  const torch::Tensor rows_hi =
      upload(row_hi, index_type).view({n, 1, size, 1}) + channel;
  const torch::Tensor cols_lo =
      upload(col_lo, index_type).view({n, 1, 1, size});
  const torch::Tensor cols_hi =
      upload(col_hi, index_type).view({n, 1, 1, size});
  const torch::Tensor weight_y =
      upload(wy, torch::kFloat32).view({n, 1, size, 1});
  const torch::Tensor weight_x =
      upload(wx, torch::kFloat32).view({n, 1, 1, size});
  auto at = [&](const torch::Tensor& rows, const torch::Tensor& cols) {
    const torch::Tensor index = (rows + cols).reshape({-1});
    return pixels.index_select(0, index)
        .view({n, 3, size, size})
        .to(torch::kFloat32);
  };
  // As ResampleToChw: blend the two rows first, then the two columns.
  torch::Tensor top = at(rows_lo, cols_lo);
  torch::Tensor left = top + weight_y * (at(rows_hi, cols_lo) - top);
  top = at(rows_lo, cols_hi);
  torch::Tensor right = top + weight_y * (at(rows_hi, cols_hi) - top);
  torch::Tensor value = left + weight_x * (right - left);
  const Normalizer norm(normalization);
  const torch::Tensor scale =
      upload(torch::tensor({norm.scale[0], norm.scale[1], norm.scale[2]}),
             torch::kFloat32)
          .view({1, 3, 1, 1});
  const torch::Tensor bias =
      upload(torch::tensor({norm.bias[0], norm.bias[1], norm.bias[2]}),
             torch::kFloat32)
          .view({1, 3, 1, 1});
  return (value * scale + bias).contiguous();
}

}  // namespace hpcai500::worker
