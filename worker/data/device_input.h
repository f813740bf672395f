// How a batch reaches the model on the run's device without stalling it:
// - DevicePrefetcher, a Dataset over another, keeps the host-to-device copy
//   of the next batch in flight on a copy stream while the current batch
//   trains (OpenDataset puts one in front of every data set);
// - ImagesOn, the one conversion of a batch's images into the model's input:
//   uint8 pixels normalised and made channels-last where they already are,
//   on the device, float images as they come.
// Decoded images cross as uint8 from pinned memory (ImageLoader with
// LoaderOptions::pin_memory): a quarter of float's bytes, and the copy
// engine overlaps them with the step instead of a blocking copy in front of
// it.
//
// The ordering on CUDA, batch k+1 fetched while batch k is handed out:
//  1. On the copy stream (a pool stream, current while fetching): the inner
//     data set makes batch k+1 (a --gpu-decode loader makes the copy stream,
//     not the step's, wait for its decode), each tensor is copied with
//     non_blocking=true (pinned sources: an asynchronous DMA; the device
//     memory is allocated on the copy stream), then an event is recorded.
//  2. Handing batch k out: the consumer's current stream waits for k's event
//     on the GPU (the host never blocks), and each of k's device tensors is
//     marked as used on that stream (record_stream), so that the caching
//     allocator, which owns their blocks on the copy stream, hands them out
//     again only once the consumer's work queued so far has run.
//  3. A pinned host batch may be dropped right after its copy is queued: the
//     caching host allocator records the copy and reuses the buffer only
//     once it finished. A pageable source (Fashion-MNIST, Extreme Weather)
//     is staged by the driver before the copy call returns.
// On the CPU there is no stream and no event; the batches pass through.
//
// Thread-compatible, as every Dataset: one thread uses it.
#ifndef HPCAI500_WORKER_DATA_DEVICE_INPUT_H_
#define HPCAI500_WORKER_DATA_DEVICE_INPUT_H_

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "worker/data/dataset.h"

namespace hpcai500::worker {

// A stream of LibTorch's pool on `device`, for work that overlaps the step
// queued on the training stream (copies, decoding); none on the CPU.
std::optional<c10::Stream> PoolStream(const torch::Device& device);

// `batch.images` on `device` as the model's input: where
// `batch.normalization` is set, the uint8 pixels p of channel c become
// p * scale[c] + bias[c] (Normalizer, worker/data/resample.h: the CPU
// decoders' former arithmetic) in float; otherwise the images as they are.
// Channels-last (4-D images) when `channels_last`, laid out so before the
// float conversion so that it writes the final layout once. Queued on the
// device's current stream. Throws std::invalid_argument for normalised
// images that are not uint8 with 3 channels.
torch::Tensor ImagesOn(const Batch& batch, const torch::Device& device,
                       bool channels_last);

// A Dataset whose batches are those of `data`, in the same order, on
// `device`, each copied while the one before it is in use (see above).
// Sizes, shapes and corrupt-sample counts are `data`'s.
class DevicePrefetcher final : public Dataset {
 public:
  DevicePrefetcher(std::unique_ptr<Dataset> data, const torch::Device& device);
  ~DevicePrefetcher() override;
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  int64_t train_size() const override { return data_->train_size(); }
  int64_t eval_size() const override { return data_->eval_size(); }
  std::array<int64_t, 3> sample_shape() const override {
    return data_->sample_shape();
  }
  int64_t num_classes() const override { return data_->num_classes(); }
  int64_t corrupt_samples() const override { return data_->corrupt_samples(); }

  // Start a pass of `data` and drop a batch prefetched from the pass before
  // (its copy may still be in flight: the allocator orders its memory's
  // reuse after it). Nothing is fetched until the first Next call.
  void StartEpoch(int epoch, int64_t max_batches) override;
  void StartEval() override;
  // `data`'s next batch of the pass on the device, the current stream made
  // to wait for its copy; the batch after it has been fetched from `data`
  // and its copy queued before this returns. nullopt once `data` returned
  // nullopt. Throws std::logic_error for the other pass's Next (NextEval
  // after StartEpoch, NextTrain after StartEval), and `data`'s exceptions.
  std::optional<Batch> NextTrain() override;
  std::optional<Batch> NextEval() override;

 private:
  enum class Pass { kNone, kTrain, kEval };
  // A batch whose copy to the device was queued, and on a GPU the event
  // recorded on the copy stream after it.
  struct InFlight {
    Batch batch;
    std::optional<c10::Event> copied;
  };

  void Start(Pass pass);
  std::optional<Batch> Next(Pass pass);
  // `data_`'s next batch of `pass` with its copy queued; nullopt at the end.
  std::optional<InFlight> Fetch(Pass pass);
  // `in_flight`'s batch, made safe to use on the current stream.
  Batch Deliver(InFlight in_flight) const;

  // Constant after construction.
  const std::unique_ptr<Dataset> data_;
  const torch::Device device_;
  const std::optional<c10::Stream> copy_stream_;  // on a GPU

  Pass pass_ = Pass::kNone;
  bool fetched_first_ = false;     // Next has run this pass
  std::optional<InFlight> ahead_;  // the pass's next batch, copy queued
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_DEVICE_INPUT_H_
