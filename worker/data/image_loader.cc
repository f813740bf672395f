#include "worker/data/image_loader.h"

#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/stop_threads.h"
#include "worker/data/sharding.h"

namespace hpcai500::worker {

std::mt19937_64 SampleRng(uint64_t seed, int epoch, int64_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed),
                    static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(epoch), static_cast<uint32_t>(index),
                    static_cast<uint32_t>(index >> 32)};
  return std::mt19937_64(seq);
}

bool CorruptSamples::Contains(int64_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return indices_.count(index) > 0;
}

void CorruptSamples::Add(int64_t index, const std::string& name,
                         const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!indices_.insert(index).second) return;
  }
  const std::string line =
      "warning: skipping corrupt image " + name + ": " + why;
  if (warn_) {
    warn_(line);
  } else {
    std::cerr << line << std::endl;
  }
}

int64_t CorruptSamples::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return indices_.size();
}

void CheckLoaderOptions(const LoaderOptions& options) {
  if (options.batch_size < 1 || options.threads < 1 ||
      options.queue_batches < 1) {
    throw std::invalid_argument(
        "image loader: batch_size, threads and queue_batches must be >= 1");
  }
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    throw std::invalid_argument(
        "image loader: rank " + std::to_string(options.rank) +
        " outside world of " + std::to_string(options.world_size));
  }
}

std::vector<int64_t> EpochShard(const LoaderOptions& options,
                                int64_t dataset_size, int epoch) {
  if (epoch < 0) throw std::invalid_argument("image loader: epoch < 0");
  return options.shuffle
             ? ShardIndices(dataset_size, options.seed, epoch, options.rank,
                            options.world_size)
             : EvalShardIndices(dataset_size, options.rank, options.world_size);
}

int64_t EpochBatches(const LoaderOptions& options, int64_t shard_size) {
  const int64_t batches =
      (shard_size + options.batch_size - 1) / options.batch_size;
  return options.max_batches > 0 ? std::min(batches, options.max_batches)
                                 : batches;
}

ImageLoader::ImageLoader(const ImageDataset& dataset, LoaderOptions options)
    : dataset_(dataset), options_(std::move(options)), corrupt_(options_.warn) {
  CheckLoaderOptions(options_);
}

ImageLoader::~ImageLoader() { StopThreads(); }

void ImageLoader::StopThreads() {
  StopAndJoin(mu_, stopping_, changed_, threads_);
}

void ImageLoader::StartEpoch(int epoch) {
  std::vector<int64_t> shard = EpochShard(options_, dataset_.size(), epoch);
  StopThreads();
  const int64_t batches = EpochBatches(options_, shard.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch_ = epoch;
    shard_ = std::move(shard);
    batches_ = batches;
    next_to_decode_ = 0;
    next_to_yield_ = 0;
    ready_.clear();
    error_ = nullptr;
    stopping_ = false;
  }
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { Decode(); });
  }
}

void ImageLoader::Decode() {
  while (true) {
    int64_t batch = 0;
    int epoch = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] {
        return stopping_ || next_to_decode_ >= batches_ ||
               next_to_decode_ < next_to_yield_ + options_.queue_batches;
      });
      if (stopping_ || next_to_decode_ >= batches_) return;
      batch = next_to_decode_++;
      epoch = epoch_;
    }
    try {
      // shard_ is not written while decoder threads run.
      ImageBatch decoded = DecodeBatch(batch, epoch, shard_);
      std::lock_guard<std::mutex> lock(mu_);
      ready_.emplace(batch, std::move(decoded));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      stopping_ = true;
    }
    changed_.notify_all();
  }
}

ImageBatch ImageLoader::DecodeBatch(int64_t batch, int epoch,
                                    const std::vector<int64_t>& shard) {
  const int64_t begin = batch * options_.batch_size;
  const int64_t end = std::min<int64_t>(begin + options_.batch_size,
                                        static_cast<int64_t>(shard.size()));
  const auto shape = dataset_.sample_shape();
  const int64_t sample_numel = shape[0] * shape[1] * shape[2];
  const auto host = torch::TensorOptions().pinned_memory(options_.pin_memory);
  torch::Tensor images = torch::empty(
      {end - begin, shape[0], shape[1], shape[2]}, host.dtype(torch::kUInt8));
  torch::Tensor labels = torch::empty({end - begin}, host.dtype(torch::kInt64));
  uint8_t* pixels = images.data_ptr<uint8_t>();
  int64_t* label = labels.data_ptr<int64_t>();
  int64_t kept = 0;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t index = shard[i];
    if (corrupt_.Contains(index)) continue;
    std::mt19937_64 rng = SampleRng(options_.seed, epoch, index);
    try {
      label[kept] = dataset_.Get(index, rng, pixels + kept * sample_numel);
      ++kept;
    } catch (const CorruptSample& e) {
      corrupt_.Add(index, dataset_.Describe(index), e.what());
    }
  }
  return {images.narrow(0, 0, kept), labels.narrow(0, 0, kept),
          dataset_.normalization()};
}

std::optional<ImageBatch> ImageLoader::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (epoch_ < 0)
    throw std::logic_error("image loader: Next before StartEpoch");
  if (next_to_yield_ >= batches_) return std::nullopt;
  changed_.wait(lock, [this] {
    return error_ != nullptr || ready_.count(next_to_yield_) > 0;
  });
  if (error_) std::rethrow_exception(error_);
  auto it = ready_.find(next_to_yield_);
  ImageBatch batch = std::move(it->second);
  ready_.erase(it);
  ++next_to_yield_;
  lock.unlock();
  changed_.notify_all();
  return batch;
}

int64_t ImageLoader::batches_per_epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

int64_t ImageLoader::shard_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shard_.size();
}

int64_t ImageLoader::corrupt_samples() const { return corrupt_.size(); }

}  // namespace hpcai500::worker
