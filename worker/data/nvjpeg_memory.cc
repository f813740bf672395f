#ifdef HPCAI500_HAVE_NVJPEG

#include "worker/data/nvjpeg_memory.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace hpcai500::worker {

namespace {

// What the callbacks return: 0 is success to nvJPEG, as cudaSuccess.
constexpr int kFailed = 1;

NvjpegMemory* Self(void* self) { return static_cast<NvjpegMemory*>(self); }

}  // namespace

NvjpegMemory::~NvjpegMemory() {
  // Dropping a DataPtr hands it back to its cache; the streams recorded on
  // it at nvJPEG's frees still hold it for their work.
  std::lock_guard<std::mutex> lock(mu_);
  device_buffers_.clear();
  pinned_buffers_.clear();
}

nvjpegDevAllocatorV2_t NvjpegMemory::DeviceAllocator() {
  return {&NvjpegMemory::DeviceMalloc, &NvjpegMemory::DeviceFree, this};
}

nvjpegPinnedAllocatorV2_t NvjpegMemory::PinnedAllocator() {
  return {&NvjpegMemory::PinnedMalloc, &NvjpegMemory::PinnedFree, this};
}

void NvjpegMemory::UseStream(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(streams_.begin(), streams_.end(), stream) == streams_.end()) {
    streams_.push_back(stream);
  }
}

int NvjpegMemory::DeviceMalloc(void* self, void** ptr, size_t size,
                               cudaStream_t stream) {
  return Self(self)->Allocate(/*pinned=*/false, ptr, size, stream);
}

int NvjpegMemory::DeviceFree(void* self, void* ptr, size_t /*size*/,
                             cudaStream_t stream) {
  return Self(self)->Free(/*pinned=*/false, ptr, stream);
}

int NvjpegMemory::PinnedMalloc(void* self, void** ptr, size_t size,
                               cudaStream_t stream) {
  return Self(self)->Allocate(/*pinned=*/true, ptr, size, stream);
}

int NvjpegMemory::PinnedFree(void* self, void* ptr, size_t /*size*/,
                             cudaStream_t stream) {
  return Self(self)->Free(/*pinned=*/true, ptr, stream);
}

int NvjpegMemory::Allocate(bool pinned, void** ptr, size_t size,
                           cudaStream_t stream) {
  *ptr = nullptr;
  if (size == 0) return 0;
  // A callback must not throw into nvJPEG: an allocation the caches cannot
  // make (after freeing what they hold) is nvJPEG's allocator failure.
  try {
    UseStream(stream);
    c10::DataPtr buffer;
    if (pinned) {
      buffer = at::getHostAllocator(at::kCUDA)->allocate(size);
    } else {
      // The device cache keeps a block for the stream it was allocated on;
      // frees record the others.
      const c10::cuda::CUDAStreamGuard on_stream(
          c10::cuda::getStreamFromExternal(stream, device_));
      buffer = c10::cuda::CUDACachingAllocator::get()->allocate(size);
    }
    if (buffer.get() == nullptr) return kFailed;
    *ptr = buffer.get();
    std::lock_guard<std::mutex> lock(mu_);
    (pinned ? pinned_buffers_ : device_buffers_)
        .emplace(*ptr, std::move(buffer));
    return 0;
  } catch (const std::exception&) {
    return kFailed;
  }
}

int NvjpegMemory::Free(bool pinned, void* ptr, cudaStream_t stream) {
  if (ptr == nullptr) return 0;
  try {
    UseStream(stream);
    c10::DataPtr buffer;
    std::vector<cudaStream_t> streams;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& buffers = pinned ? pinned_buffers_ : device_buffers_;
      auto it = buffers.find(ptr);
      if (it == buffers.end()) return kFailed;
      buffer = std::move(it->second);
      buffers.erase(it);
      streams = streams_;
    }
    for (cudaStream_t s : streams) {
      const c10::cuda::CUDAStream used =
          c10::cuda::getStreamFromExternal(s, device_);
      if (pinned) {
        at::getHostAllocator(at::kCUDA)->record_event(
            buffer.get(), buffer.get_context(), used.unwrap());
      } else {
        c10::cuda::CUDACachingAllocator::recordStream(buffer, used);
      }
    }
    return 0;  // `buffer` goes back to its cache here
  } catch (const std::exception&) {
    return kFailed;
  }
}

}  // namespace hpcai500::worker

#endif  // HPCAI500_HAVE_NVJPEG
