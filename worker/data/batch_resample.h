// The augmentation of --gpu-decode: a whole batch of decoded images cropped,
// resized (bilinear), flipped and normalised with a few ATen ops on the
// device that holds the pixels. It samples exactly the taps ResampleToChw
// (worker/data/resample.h) samples on the CPU, so that for the same plans
// (worker/data/image_data.h PlanSample) the two paths differ only by float
// rounding. Device-agnostic: the unit tests run it on the CPU.
//
// Thread-safe: a pure function of its arguments.
#ifndef HPCAI500_WORKER_DATA_BATCH_RESAMPLE_H_
#define HPCAI500_WORKER_DATA_BATCH_RESAMPLE_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "worker/data/image_data.h"

namespace hpcai500::worker {

// Where one decoded image lies in a batch's packed pixels: `height` rows of
// `width` interleaved RGB pixels (3 * width bytes a row) from byte `offset`.
struct PackedImage {
  int64_t offset = 0;
  int64_t width = 0;
  int64_t height = 0;
};

// Image b of `pixels` (uint8, 1-D, holding every `images[b]`) resampled as
// `plans[b]` says (its crop in the image's own pixels) to size x size and
// normalised: float [B, 3, size, size], contiguous, on pixels' device. On a
// GPU the work is queued on the current stream. Throws std::invalid_argument
// when images and plans differ in count, an image lies outside `pixels`, or
// a crop is empty or outside its image.
torch::Tensor ResampleBatch(const torch::Tensor& pixels,
                            const std::vector<PackedImage>& images,
                            const std::vector<SamplePlan>& plans, int64_t size,
                            const Normalization& normalization);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_BATCH_RESAMPLE_H_
