// ImageLoader: decoder threads filling a bounded queue of ready batches of a
// rank's shard (worker/data/sharding.h) of an ImageDataset
// (worker/data/image_data.h), in a deterministic order; corrupt samples are
// counted and skipped. Batches come out as float [B, C, H, W] (contiguous
// NCHW) and int64 labels [B].
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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "worker/data/image_data.h"

namespace hpcai500::worker {

struct ImageBatch {
  torch::Tensor images;  // float [B, C, H, W], contiguous, CPU
  torch::Tensor labels;  // int64 [B], CPU
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
  // Receives one line per corrupt sample (the first time this loader meets
  // it), from decoder threads, possibly several at once: it must be
  // thread-safe. Null: standard error.
  std::function<void(const std::string&)> warn;
};

// Batches of this rank's shard of `dataset`, one epoch at a time. Batch b of
// an epoch holds shard entries [b*B, (b+1)*B) minus corrupt samples (so it
// may be smaller, and the last one is partial), always in that order;
// augmentation draws from a generator seeded by (seed, epoch, sample index),
// so the output does not depend on thread timing.
// Thread-safety: one consumer thread calls StartEpoch/Next; the decoder
// threads are internal.
class ImageLoader {
 public:
  // Borrows `dataset` for the loader's lifetime. Throws std::invalid_argument
  // for batch_size, threads or queue_batches < 1, or a bad rank/world_size.
  ImageLoader(const ImageDataset& dataset, LoaderOptions options);
  ~ImageLoader();
  ImageLoader(const ImageLoader&) = delete;
  ImageLoader& operator=(const ImageLoader&) = delete;

  // Stops any epoch in flight and starts decoding `epoch` (>= 0).
  void StartEpoch(int epoch);
  // The next batch of the epoch, or nullopt after its last. Blocks while the
  // batch is being decoded. Rethrows a decoder's non-corrupt-sample error.
  std::optional<ImageBatch> Next();

  // Batches StartEpoch's epoch yields.
  int64_t batches_per_epoch() const;
  // Samples in this rank's shard (before corrupt ones are dropped).
  int64_t shard_size() const;
  // Distinct corrupt samples found so far (each is warned about once).
  int64_t corrupt_samples() const;

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
  std::set<int64_t> corrupt_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_IMAGE_LOADER_H_
