// JPEG batches decoded on a GPU by NVIDIA's nvJPEG (--gpu-decode). The
// library is opened at run time (dlopen), so that the worker links and runs
// where nvJPEG is not installed: only --gpu-decode needs libnvjpeg.so.13
// (PyPI's nvidia-nvjpeg; docs/design.md "Fast paths"). The header comes from
// the same package at build time; a worker built without it says so when
// --gpu-decode asks for nvJPEG.
#ifndef HPCAI500_WORKER_DATA_NVJPEG_DECODER_H_
#define HPCAI500_WORKER_DATA_NVJPEG_DECODER_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "worker/data/gpu_image_loader.h"

namespace hpcai500::worker {

// The nvJPEG entry points the decoder calls, resolved in an opened library.
// Opaque outside nvjpeg_decoder.cc; immutable, so thread-safe.
struct NvjpegApi;

// Where --gpu-decode looks for libnvjpeg: $HPCAI500_NVJPEG_LIBRARY alone when
// it is set; else libnvjpeg.so.13 on the dynamic loader's path, then the one
// found beside nvJPEG's header when the worker was configured.
std::vector<std::string> NvjpegLibraryCandidates();

// Opens the first of `candidates` that dlopen loads and resolves the entry
// points. Throws std::runtime_error naming --gpu-decode and, for each
// candidate, why it did not load (or the entry point it lacks); or, in a
// worker built without nvJPEG's header, saying so.
std::shared_ptr<const NvjpegApi> OpenNvjpeg(
    const std::vector<std::string>& candidates);

// Decodes batches with nvJPEG's batched API into interleaved RGB on the
// current CUDA device: with its hardware decoder (A100, H100, H200) where
// the GPU has one, else its CUDA one. Files the hardware decoder does not
// take (progressive ones, some chroma subsamplings) are decoded an image at
// a time beside the batch, and so is a batch the batched call refuses, so
// that a file nvJPEG cannot decode (CMYK, truncated) costs only itself.
// Decodes alternate between two sets of nvJPEG states, so a batch can be
// queued while the one before still runs; a call first waits for the GPU
// work of the call before last. nvJPEG's device and pinned buffers come
// from LibTorch's caching allocators (worker/data/nvjpeg_memory.h). Not
// thread-safe: one thread decodes.
class NvjpegDecoder final : public JpegBatchDecoder {
 public:
  // Creates nvJPEG's handles on `device` (a CUDA device). Throws
  // std::runtime_error naming the nvJPEG call that failed.
  NvjpegDecoder(std::shared_ptr<const NvjpegApi> api,
                const torch::Device& device);
  ~NvjpegDecoder() override;
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  DecodedBatch Decode(
      const std::vector<const std::vector<uint8_t>*>& jpegs) override;
  torch::Device device() const override { return device_; }
  // "hardware" or "cuda": which of nvJPEG's decoders the batches go to.
  std::string backend() const;

 private:
  struct Handles;
  const std::shared_ptr<const NvjpegApi> api_;
  const torch::Device device_;
  std::unique_ptr<Handles> handles_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_NVJPEG_DECODER_H_
