// --gpu-decode: a rank's training batches of a folder of JPEG files decoded
// a batch at a time by a JpegBatchDecoder (nvJPEG on the GPU,
// worker/data/nvjpeg_decoder.h) and augmented where the pixels are
// (worker/data/batch_resample.h), on a thread of its own and, on a GPU, a
// CUDA stream of its own, up to queue_batches ahead of the training step.
// The shard, the batches, the crops and flips (PlanSample with SampleRng)
// and the corrupt samples skipped are ImageLoader's for the same options;
// only the decoded pixels differ (libjpeg-turbo decodes at a reduced scale
// where the crop allows, the GPU always at full size).
#ifndef HPCAI500_WORKER_DATA_GPU_IMAGE_LOADER_H_
#define HPCAI500_WORKER_DATA_GPU_IMAGE_LOADER_H_

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "worker/data/batch_resample.h"
#include "worker/data/image_data.h"
#include "worker/data/image_loader.h"

namespace hpcai500::worker {

// What a batch decoder makes of a batch of JPEG files: every image it could
// decode as interleaved RGB, packed into one tensor, and for each input the
// reason it could not ("" for those it did).
struct DecodedBatch {
  torch::Tensor pixels;             // uint8, 1-D, on the decoder's device
  std::vector<PackedImage> images;  // per input; meaningful where no error
  std::vector<std::string> errors;  // per input; "" when decoded
};

// Decodes batches of JPEG files. Not thread-safe: one thread decodes.
class JpegBatchDecoder {
 public:
  virtual ~JpegBatchDecoder() = default;
  // Decodes `jpegs` (borrowed for the call). On a GPU the work is queued on
  // the calling thread's current stream. A file it cannot decode gets its
  // error; a failure of the decoder itself throws std::runtime_error.
  virtual DecodedBatch Decode(
      const std::vector<const std::vector<uint8_t>*>& jpegs) = 0;
  // Where the pixels come out.
  virtual torch::Device device() const = 0;
};

// Batches of the training split, as ImageLoader makes them but decoded by
// `decoder`: images float [B, 3, S, S] (contiguous NCHW) and labels int64
// [B], both on decoder->device(). On a GPU, Next() makes the caller's
// current stream wait for the batch and marks its tensors as used there, so
// the caller needs no synchronisation of its own.
// Thread-safety: one consumer thread calls StartEpoch/Next; the decoding
// thread is internal.
class GpuImageLoader final : public BatchSource {
 public:
  // Borrows `dataset`, which must hold JPEG files (jpeg_options() non-null,
  // else std::invalid_argument naming --gpu-decode), for the loader's
  // lifetime. Throws std::invalid_argument for options ImageLoader refuses.
  // options.threads read the files of a batch in parallel.
  GpuImageLoader(const ImageDataset& dataset, LoaderOptions options,
                 std::unique_ptr<JpegBatchDecoder> decoder);
  ~GpuImageLoader() override;
  GpuImageLoader(const GpuImageLoader&) = delete;
  GpuImageLoader& operator=(const GpuImageLoader&) = delete;

  void StartEpoch(int epoch) override;
  std::optional<ImageBatch> Next() override;
  int64_t corrupt_samples() const override { return corrupt_.size(); }

 private:
  struct Ready {
    ImageBatch batch;
    std::optional<c10::Event> done;  // on a GPU: recorded after the batch
  };
  void Produce(int epoch, std::vector<int64_t> shard, int64_t batches);
  // Batch `indices` of `epoch` decoded and augmented, corrupt files
  // skipped; the files read go to *files, which must outlive the decoding.
  ImageBatch MakeBatch(int epoch, const std::vector<int64_t>& indices,
                       std::vector<std::optional<EncodedSample>>* files);
  std::vector<std::optional<EncodedSample>> ReadFiles(
      const std::vector<int64_t>& indices);
  void Stop();

  // Constant after construction.
  const ImageDataset& dataset_;
  const ImageFolderOptions options_jpeg_;
  const LoaderOptions options_;
  const std::unique_ptr<JpegBatchDecoder> decoder_;  // used by the producer
  const std::optional<c10::Stream> stream_;          // on a GPU: the side one

  CorruptSamples corrupt_;
  std::thread producer_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_.
  bool started_ = false;
  bool stopping_ = false;
  bool finished_ = false;  // the producer made the epoch's last batch
  std::deque<Ready> ready_;
  std::exception_ptr error_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_GPU_IMAGE_LOADER_H_
