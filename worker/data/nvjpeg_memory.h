// nvJPEG's device and pinned buffers taken from LibTorch's caching
// allocators (--gpu-decode, worker/data/nvjpeg_decoder.h). With nvJPEG's
// defaults (cudaMalloc, cudaHostAlloc) a decode fails when LibTorch's cache
// holds the free memory, and each cudaFree synchronises the device; from
// the caches, an allocation first frees cached blocks and retries, and a
// free waits for nothing. A buffer goes back to its cache as used on every
// stream nvJPEG was given (recordStream for device memory, record_event for
// pinned), so it is handed out again only once that work has finished.
//
// Only where nvJPEG's header was found (HPCAI500_HAVE_NVJPEG); include it
// after nvjpeg.h's guard.
//
// Thread-safe: nvJPEG may allocate from threads of its own; mu_ guards the
// buffers and streams.
#ifndef HPCAI500_WORKER_DATA_NVJPEG_MEMORY_H_
#define HPCAI500_WORKER_DATA_NVJPEG_MEMORY_H_

#include <c10/core/Allocator.h>
#include <nvjpeg.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace hpcai500::worker {

class NvjpegMemory {
 public:
  // Buffers on CUDA device `device` (an index).
  explicit NvjpegMemory(int device) : device_(device) {}
  // Frees what nvJPEG did not (it frees all when its handles are destroyed,
  // which must come first).
  ~NvjpegMemory();
  NvjpegMemory(const NvjpegMemory&) = delete;
  NvjpegMemory& operator=(const NvjpegMemory&) = delete;

  // The allocators for nvjpegCreateExV2; they point at this object, which
  // must outlive the handles made with them.
  nvjpegDevAllocatorV2_t DeviceAllocator();
  nvjpegPinnedAllocatorV2_t PinnedAllocator();

  // Says that nvJPEG is about to queue work on `stream`: its buffers freed
  // from now on wait for that work before they are reused.
  void UseStream(cudaStream_t stream);

 private:
  static int DeviceMalloc(void* self, void** ptr, size_t size,
                          cudaStream_t stream);
  static int DeviceFree(void* self, void* ptr, size_t size,
                        cudaStream_t stream);
  static int PinnedMalloc(void* self, void** ptr, size_t size,
                          cudaStream_t stream);
  static int PinnedFree(void* self, void* ptr, size_t size,
                        cudaStream_t stream);
  int Allocate(bool pinned, void** ptr, size_t size, cudaStream_t stream);
  int Free(bool pinned, void* ptr, cudaStream_t stream);

  // Constant after construction.
  const int device_;

  std::mutex mu_;
  // Guarded by mu_: the live buffers by address, and every stream nvJPEG
  // was given.
  std::unordered_map<void*, c10::DataPtr> device_buffers_;
  std::unordered_map<void*, c10::DataPtr> pinned_buffers_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_NVJPEG_MEMORY_H_
