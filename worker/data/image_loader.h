// ImageLoader: decoder threads filling a bounded queue of ready batches of a
// rank's shard (worker/data/sharding.h) of an ImageDataset
// (worker/data/image_data.h), in a deterministic order; corrupt samples are
// counted and skipped. Batches come out as uint8 pixels [B, C, H, W]
// (contiguous NCHW) with the data set's normalisation, and int64 labels [B],
// in pinned memory when the run's device is a GPU.
#ifndef HPCAI500_WORKER_DATA_IMAGE_LOADER_H_
#define HPCAI500_WORKER_DATA_IMAGE_LOADER_H_

#include <torch/torch.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "worker/data/image_data.h"

namespace hpcai500::worker {

// A batch of a BatchSource: `images` are uint8 pixels [B, C, H, W] that
// `normalization` turns into the model's input (ImageLoader), or, where
// `normalization` is unset, float input already (GpuImageLoader).
struct ImageBatch {
  torch::Tensor images;  // uint8 or float [B, C, H, W], contiguous
  torch::Tensor labels;  // int64 [B]
  std::optional<Normalization> normalization = std::nullopt;  // uint8 images
  int64_t size() const { return labels.size(0); }
};

struct LoaderOptions {
  int64_t batch_size = 256;
  int threads = 4;        // decoder threads
  int queue_batches = 4;  // ready batches held ahead of the consumer
  uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  int64_t max_batches = 0;  // > 0: stop each epoch after this many batches
  bool shuffle = true;      // false: shard in index order (evaluation)
  // Batches in page-locked memory, for an asynchronous copy to a GPU. Only
  // where CUDA is the run's device: pinning needs a CUDA context.
  bool pin_memory = false;
  // Receives one line per corrupt sample (the first time this loader meets
  // it), from decoder threads, possibly several at once: it must be
  // thread-safe. Null: standard error.
  std::function<void(const std::string&)> warn;
};

// Throws std::invalid_argument for batch_size, threads or queue_batches < 1,
// or a rank outside world_size.
void CheckLoaderOptions(const LoaderOptions& options);
// This rank's shard of `epoch` (>= 0, else std::invalid_argument): shuffled
// per epoch (worker/data/sharding.h ShardIndices), or in index order.
std::vector<int64_t> EpochShard(const LoaderOptions& options,
                                int64_t dataset_size, int epoch);
// Batches of an epoch over `shard_size` samples: the last one partial, at
// most max_batches when that is > 0.
int64_t EpochBatches(const LoaderOptions& options, int64_t shard_size);

// One rank's batches, an epoch at a time: ImageLoader (decoder threads on
// the CPU) or GpuImageLoader (--gpu-decode, worker/data/gpu_image_loader.h).
// Thread-compatible: one consumer thread.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Stops any epoch in flight and starts `epoch` (>= 0).
  virtual void StartEpoch(int epoch) = 0;
  // The next batch of the epoch, or nullopt after its last. Blocks while it
  // is being decoded; rethrows a decoder's error.
  virtual std::optional<ImageBatch> Next() = 0;
  // Distinct corrupt samples found (and skipped) so far.
  virtual int64_t corrupt_samples() const = 0;
};

// The samples found corrupt, each warned about once through `warn` (null:
// standard error). Thread-safe.
class CorruptSamples {
 public:
  explicit CorruptSamples(std::function<void(const std::string&)> warn)
      : warn_(std::move(warn)) {}
  bool Contains(int64_t index) const;
  // Adds `index`; the first time, warns "skipping corrupt image <name>:
  // <why>".
  void Add(int64_t index, const std::string& name, const std::string& why);
  int64_t size() const;

 private:
  const std::function<void(const std::string&)> warn_;
  mutable std::mutex mu_;
  std::set<int64_t> indices_;  // guarded by mu_
};

// The generator of sample `index`'s augmentation in `epoch`, seeded by
// (seed, epoch, index) alone, so that a sample is cropped alike whichever
// thread, or decoder (--gpu-decode, worker/data/gpu_image_loader.h), takes it.
std::mt19937_64 SampleRng(uint64_t seed, int epoch, int64_t index);

// Batches of this rank's shard of `dataset`, one epoch at a time. Batch b of
// an epoch holds shard entries [b*B, (b+1)*B) minus corrupt samples (so it
// may be smaller, and the last one is partial), always in that order;
// augmentation draws from a generator seeded by (seed, epoch, sample index),
// so the output does not depend on thread timing.
// Thread-safety: one consumer thread calls StartEpoch/Next; the decoder
// threads are internal.
class ImageLoader final : public BatchSource {
 public:
  // Borrows `dataset` for the loader's lifetime. Throws std::invalid_argument
  // for batch_size, threads or queue_batches < 1, or a bad rank/world_size.
  ImageLoader(const ImageDataset& dataset, LoaderOptions options);
  ~ImageLoader() override;
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  // Stops any epoch in flight and starts decoding `epoch` (>= 0).
  void StartEpoch(int epoch) override;
  // The next batch of the epoch, or nullopt after its last. Blocks while the
  // batch is being decoded. Rethrows a decoder's non-corrupt-sample error.
  std::optional<ImageBatch> Next() override;

  // Batches StartEpoch's epoch yields.
  int64_t batches_per_epoch() const;
  // Samples in this rank's shard (before corrupt ones are dropped).
  int64_t shard_size() const;
  // Distinct corrupt samples found so far (each is warned about once).
  int64_t corrupt_samples() const override;

 private:
  void Decode();  // decoder thread body
  ImageBatch DecodeBatch(int64_t batch, int epoch,
                         const std::vector<int64_t>& shard);
  void StopThreads();

  // Constant after construction.
  const ImageDataset& dataset_;
  const LoaderOptions options_;

  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_.
  int epoch_ = -1;
  std::vector<int64_t> shard_;  // written only while no decoder runs
  int64_t batches_ = 0;
  int64_t next_to_decode_ = 0;
  int64_t next_to_yield_ = 0;
  std::map<int64_t, ImageBatch> ready_;
  std::exception_ptr error_;
  bool stopping_ = false;
  CorruptSamples corrupt_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_IMAGE_LOADER_H_
