#include "worker/data/device_input.h"

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace hpcai500::worker {

std::optional<c10::Stream> PoolStream(const torch::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  return cuda.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
}

namespace {

// `values`, one per channel, as a [1, 3, 1, 1] float tensor on `device`.
torch::Tensor PerChannel(const std::array<float, 3>& values,
                         const torch::Device& device) {
  // Staged by the driver before the copy returns: the stack array may go.
  return torch::from_blob(const_cast<float*>(values.data()), {1, 3, 1, 1},
                          torch::kFloat32)
      .to(device, /*non_blocking=*/true);
}

// `batch` with every tensor copied to `device` on the current stream.
Batch CopyTo(Batch batch, const torch::Device& device) {
  auto to = [&device](torch::Tensor& t) {
    if (t.defined()) t = t.to(device, /*non_blocking=*/true);
  };
  to(batch.images);
  to(batch.labels);
  for (DetectionTarget& target : batch.targets) {
    to(target.boxes);
    to(target.labels);
  }
  return batch;
}

}  // namespace

torch::Tensor ImagesOn(const Batch& batch, const torch::Device& device,
                       bool channels_last) {
  torch::Tensor x = batch.images.to(device, /*non_blocking=*/true);
  // Restrided while still uint8: a quarter of the bytes of a float copy.
  if (channels_last && x.dim() == 4) {
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  }
  if (!batch.normalization) return x;
  if (x.scalar_type() != torch::kUInt8 || x.dim() != 4 || x.size(1) != 3) {
    throw std::invalid_argument(
        "normalised images must be uint8 [B, 3, H, W], not " +
        std::string(c10::toString(x.scalar_type())) + " of " +
        std::to_string(x.dim()) + " dimensions");
  }
  const Normalizer norm(*batch.normalization);
  // uint8 * float promotes to float in one pass; the layout follows x.
  return x.mul(PerChannel(norm.scale, device))
      .add_(PerChannel(norm.bias, device));
}

DevicePrefetcher::DevicePrefetcher(std::unique_ptr<Dataset> data,
                                   const torch::Device& device)
    : data_(std::move(data)),
      device_(device),
      copy_stream_(PoolStream(device)) {}

DevicePrefetcher::~DevicePrefetcher() = default;

void DevicePrefetcher::StartEpoch(int epoch, int64_t max_batches) {
  data_->StartEpoch(epoch, max_batches);
  Start(Pass::kTrain);
}

void DevicePrefetcher::StartEval() {
  data_->StartEval();
  Start(Pass::kEval);
}

void DevicePrefetcher::Start(Pass pass) {
  pass_ = pass;
  fetched_first_ = false;
  ahead_.reset();
}

std::optional<Batch> DevicePrefetcher::NextTrain() {
  return Next(Pass::kTrain);
}

std::optional<Batch> DevicePrefetcher::NextEval() { return Next(Pass::kEval); }

std::optional<Batch> DevicePrefetcher::Next(Pass pass) {
  if (pass != pass_) {
    throw std::logic_error(
        "device prefetcher: the next batch of a pass that was not started");
  }
  if (!fetched_first_) {
    fetched_first_ = true;
    ahead_ = Fetch(pass);
  }
  if (!ahead_) return std::nullopt;
  InFlight current = std::move(*ahead_);
  ahead_ = Fetch(pass);
  return Deliver(std::move(current));
}

std::optional<DevicePrefetcher::InFlight> DevicePrefetcher::Fetch(Pass pass) {
  std::optional<c10::StreamGuard> on_copy_stream;
  if (copy_stream_) on_copy_stream.emplace(*copy_stream_);
  std::optional<Batch> next =
      pass == Pass::kTrain ? data_->NextTrain() : data_->NextEval();
  if (!next) return std::nullopt;
  InFlight in_flight{CopyTo(std::move(*next), device_), std::nullopt};
  if (copy_stream_) {
    in_flight.copied.emplace(device_.type());
    in_flight.copied->record(*copy_stream_);
  }
  return in_flight;
}

Batch DevicePrefetcher::Deliver(InFlight in_flight) const {
  Batch& batch = in_flight.batch;
  if (!in_flight.copied) return std::move(batch);
  c10::impl::VirtualGuardImpl cuda(c10::DeviceType::CUDA);
  const c10::Stream consumer = cuda.getStream(device_);
  in_flight.copied->block(consumer);
  auto used_on_consumer = [&consumer](const torch::Tensor& t) {
    if (t.defined() && t.is_cuda()) t.record_stream(consumer);
  };
  used_on_consumer(batch.images);
  used_on_consumer(batch.labels);
  for (const DetectionTarget& target : batch.targets) {
    used_on_consumer(target.boxes);
    used_on_consumer(target.labels);
  }
  return std::move(batch);
}

}  // namespace hpcai500::worker
