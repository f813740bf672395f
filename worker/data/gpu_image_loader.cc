#include "worker/data/gpu_image_loader.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/stop_threads.h"
#include "worker/data/device_input.h"

namespace hpcai500::worker {

namespace {

const ImageFolderOptions& JpegOptionsOf(const ImageDataset& dataset) {
  const ImageFolderOptions* options = dataset.jpeg_options();
  if (options == nullptr) {
    throw std::invalid_argument(
        "--gpu-decode decodes JPEG files, and this data set holds none");
  }
  return *options;
}

// `host` on `device`, copied without blocking where a GPU is.
torch::Tensor Upload(const torch::Tensor& host, const torch::Device& device) {
  if (!device.is_cuda()) return host;
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace

GpuImageLoader::GpuImageLoader(const ImageDataset& dataset,
                               LoaderOptions options,
                               std::unique_ptr<JpegBatchDecoder> decoder)
    : dataset_(dataset),
      options_jpeg_(JpegOptionsOf(dataset)),
      options_(std::move(options)),
      decoder_(std::move(decoder)),
      stream_(PoolStream(decoder_->device())),
      corrupt_(options_.warn) {
  CheckLoaderOptions(options_);
}

GpuImageLoader::~GpuImageLoader() { Stop(); }

void GpuImageLoader::Stop() {
  StopAndJoin(mu_, stopping_, changed_, producer_);
}

void GpuImageLoader::StartEpoch(int epoch) {
  std::vector<int64_t> shard = EpochShard(options_, dataset_.size(), epoch);
  const int64_t batches = EpochBatches(options_, shard.size());
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
    stopping_ = false;
    finished_ = false;
    ready_.clear();
    error_ = nullptr;
  }
  producer_ = std::thread([this, epoch, shard = std::move(shard), batches] {
    Produce(epoch, shard, batches);
  });
}

void GpuImageLoader::Produce(int epoch, std::vector<int64_t> shard,
                             int64_t batches) {
  std::optional<c10::StreamGuard> on_side_stream;
  if (stream_) on_side_stream.emplace(*stream_);
  // nvJPEG may read a batch's file bytes until its work on the stream is
  // done: the files of the last two batches are held, and those of batch
  // b - 2 are dropped only once b is queued and b - 2's work has finished
  // (the decoder itself waits for it before reusing b - 2's states), so
  // reading and queueing batch b overlaps the GPU's work on b - 1.
  struct Held {
    std::vector<std::optional<EncodedSample>> files;
    std::optional<c10::Event> done;
  };
  std::array<Held, 2> held;
  for (int64_t b = 0; b < batches; ++b) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] {
        return stopping_ ||
               static_cast<int64_t>(ready_.size()) < options_.queue_batches;
      });
      if (stopping_) break;
    }
    const int64_t begin = b * options_.batch_size;
    const int64_t end = std::min<int64_t>(begin + options_.batch_size,
                                          static_cast<int64_t>(shard.size()));
    Ready ready;
    std::vector<std::optional<EncodedSample>> files;
    try {
      ready.batch = MakeBatch(
          epoch,
          std::vector<int64_t>(shard.begin() + begin, shard.begin() + end),
          &files);
      Held& slot = held[b % 2];
      if (slot.done) slot.done->synchronize();
      if (stream_) {
        ready.done.emplace(c10::DeviceType::CUDA);
        ready.done->record(*stream_);
        slot.done.emplace(c10::DeviceType::CUDA);
        slot.done->record(*stream_);
      }
      slot.files = std::move(files);
    } catch (...) {
      // The files go with this iteration: first let what was queued run.
      if (stream_) {
        try {
          stream_->synchronize();
        } catch (...) {
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      changed_.notify_all();
      break;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(ready));
    }
    changed_.notify_all();
  }
  for (Held& slot : held) {
    if (slot.done) slot.done->synchronize();
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  changed_.notify_all();
}

std::vector<std::optional<EncodedSample>> GpuImageLoader::ReadFiles(
    const std::vector<int64_t>& indices) {
  const int n = static_cast<int>(indices.size());
  std::vector<std::optional<EncodedSample>> files(n);
  std::vector<std::exception_ptr> errors(options_.threads);
  auto read_every_nth = [&](int first) {
    try {
      for (int i = first; i < n; i += options_.threads) {
        if (corrupt_.Contains(indices[i])) continue;
        try {
          files[i] = dataset_.ReadEncoded(indices[i]);
        } catch (const CorruptSample& e) {
          corrupt_.Add(indices[i], dataset_.Describe(indices[i]), e.what());
        }
      }
    } catch (...) {
      errors[first] = std::current_exception();
    }
  };
  std::vector<std::thread> readers;
  for (int t = 1; t < std::min(options_.threads, n); ++t) {
    readers.emplace_back(read_every_nth, t);
  }
  read_every_nth(0);
  for (std::thread& reader : readers) reader.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return files;
}

ImageBatch GpuImageLoader::MakeBatch(
    int epoch, const std::vector<int64_t>& indices,
    std::vector<std::optional<EncodedSample>>* read_files) {
  std::vector<std::optional<EncodedSample>>& files = *read_files;
  files = ReadFiles(indices);
  std::vector<const std::vector<uint8_t>*> jpegs;
  std::vector<size_t> read;  // position in `indices` of each of `jpegs`
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i]) continue;
    jpegs.push_back(&files[i]->bytes);
    read.push_back(i);
  }
  const torch::Device device = decoder_->device();
  const int64_t size = options_jpeg_.crop_size;
  DecodedBatch decoded = decoder_->Decode(jpegs);
  if (decoded.images.size() != jpegs.size() ||
      decoded.errors.size() != jpegs.size()) {
    throw std::logic_error("--gpu-decode: the decoder answered for " +
                           std::to_string(decoded.errors.size()) + " of " +
                           std::to_string(jpegs.size()) + " files");
  }
  std::vector<PackedImage> images;
  std::vector<SamplePlan> plans;
  std::vector<int64_t> labels;
  for (size_t k = 0; k < read.size(); ++k) {
    const int64_t index = indices[read[k]];
    if (!decoded.errors[k].empty()) {
      corrupt_.Add(index, dataset_.Describe(index), decoded.errors[k]);
      continue;
    }
    const PackedImage& image = decoded.images[k];
    std::mt19937_64 rng = SampleRng(options_.seed, epoch, index);
    plans.push_back(PlanSample(Split::kTrain, image.width, image.height,
                               options_jpeg_, rng));
    images.push_back(image);
    labels.push_back(files[read[k]]->label);
  }
  ImageBatch batch;
  batch.labels = Upload(torch::tensor(labels, torch::kInt64), device);
  batch.images =
      images.empty()
          ? torch::empty({0, 3, size, size},
                         torch::TensorOptions(torch::kFloat32).device(device))
          : ResampleBatch(decoded.pixels, images, plans, size,
                          options_jpeg_.normalization);
  return batch;
}

std::optional<ImageBatch> GpuImageLoader::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) {
    throw std::logic_error("gpu image loader: Next before StartEpoch");
  }
  changed_.wait(lock,
                [this] { return error_ || !ready_.empty() || finished_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }
  Ready ready = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  if (ready.done) {
    // The step runs on the caller's stream: it waits for the batch there,
    // and the allocator must not hand the batch's memory to the side stream
    // again before that stream is done with it.
    c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
    const c10::Stream current = cuda.getStream(ready.batch.images.device());
    ready.done->block(current);
    ready.batch.images.record_stream(current);
    ready.batch.labels.record_stream(current);
  }
  return std::move(ready.batch);
}

}  // namespace hpcai500::worker
