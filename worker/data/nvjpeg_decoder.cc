#include "worker/data/nvjpeg_decoder.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#ifdef HPCAI500_HAVE_NVJPEG
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>
#include <nvjpeg.h>

#include "worker/data/nvjpeg_memory.h"
#endif

namespace hpcai500::worker {

#ifdef HPCAI500_HAVE_NVJPEG

struct NvjpegApi {
  ~NvjpegApi() {
    if (library != nullptr) dlclose(library);
  }
  void* library = nullptr;
  std::string path;
  decltype(&nvjpegCreateExV2) CreateExV2 = nullptr;
  decltype(&nvjpegDestroy) Destroy = nullptr;
  decltype(&nvjpegJpegStateCreate) JpegStateCreate = nullptr;
  decltype(&nvjpegJpegStateDestroy) JpegStateDestroy = nullptr;
  decltype(&nvjpegGetImageInfo) GetImageInfo = nullptr;
  decltype(&nvjpegDecode) Decode = nullptr;
  decltype(&nvjpegDecodeBatchedInitialize) DecodeBatchedInitialize = nullptr;
  decltype(&nvjpegDecodeBatched) DecodeBatched = nullptr;
  decltype(&nvjpegJpegStreamCreate) JpegStreamCreate = nullptr;
  decltype(&nvjpegJpegStreamDestroy) JpegStreamDestroy = nullptr;
  decltype(&nvjpegJpegStreamParse) JpegStreamParse = nullptr;
  decltype(&nvjpegDecodeBatchedSupported) DecodeBatchedSupported = nullptr;
};

namespace {

std::string StatusName(nvjpegStatus_t status) {
  switch (status) {
    case NVJPEG_STATUS_SUCCESS:
      return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
      return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "incomplete bitstream";
  }
  return "status " + std::to_string(static_cast<int>(status));
}

// Statuses that blame the file rather than the decoder.
bool BlamesTheFile(nvjpegStatus_t status) {
  return status == NVJPEG_STATUS_BAD_JPEG ||
         status == NVJPEG_STATUS_JPEG_NOT_SUPPORTED ||
         status == NVJPEG_STATUS_INCOMPLETE_BITSTREAM;
}

void Check(nvjpegStatus_t status, const char* call) {
  if (status != NVJPEG_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("--gpu-decode: ") + call +
                             " failed: " + StatusName(status));
  }
}

// Resolves `name` into *fn; adds it to *missing when the library lacks it.
template <typename Fn>
void Resolve(void* library, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (*fn == nullptr)
    *missing += std::string(missing->empty() ? "" : ", ") + name;
}

}  // namespace

std::shared_ptr<const NvjpegApi> OpenNvjpeg(
    const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why != nullptr ? why : "not loaded");
      continue;
    }
    auto api = std::make_shared<NvjpegApi>();
    api->library = library;
    api->path = path;
    std::string missing;
    Resolve(library, "nvjpegCreateExV2", &api->CreateExV2, &missing);
    Resolve(library, "nvjpegDestroy", &api->Destroy, &missing);
    Resolve(library, "nvjpegJpegStateCreate", &api->JpegStateCreate, &missing);
    Resolve(library, "nvjpegJpegStateDestroy", &api->JpegStateDestroy,
            &missing);
    Resolve(library, "nvjpegGetImageInfo", &api->GetImageInfo, &missing);
    Resolve(library, "nvjpegDecode", &api->Decode, &missing);
    Resolve(library, "nvjpegDecodeBatchedInitialize",
            &api->DecodeBatchedInitialize, &missing);
    Resolve(library, "nvjpegDecodeBatched", &api->DecodeBatched, &missing);
    Resolve(library, "nvjpegJpegStreamCreate", &api->JpegStreamCreate,
            &missing);
    Resolve(library, "nvjpegJpegStreamDestroy", &api->JpegStreamDestroy,
            &missing);
    Resolve(library, "nvjpegJpegStreamParse", &api->JpegStreamParse, &missing);
    Resolve(library, "nvjpegDecodeBatchedSupported",
            &api->DecodeBatchedSupported, &missing);
    if (missing.empty()) return api;
    tried += "\n  " + path + ": lacks " + missing;
  }
  throw std::runtime_error(
      "--gpu-decode needs nvJPEG (libnvjpeg.so.13, PyPI's nvidia-nvjpeg; "
      "HPCAI500_NVJPEG_LIBRARY names the file), and none of these loaded:" +
      tried);
}

std::vector<std::string> NvjpegLibraryCandidates() {
  if (const char* path = std::getenv("HPCAI500_NVJPEG_LIBRARY");
      path != nullptr && *path != '\0') {
    return {path};
  }
  std::vector<std::string> candidates = {"libnvjpeg.so.13"};
#ifdef HPCAI500_NVJPEG_LIBRARY_HINT
  candidates.push_back(HPCAI500_NVJPEG_LIBRARY_HINT);
#endif
  return candidates;
}

// nvJPEG's handles and states. A state holds the buffers of the decode
// queued with it until the GPU has run that work, so the decodes alternate
// between two sets of states: a batch is queued on the states the batch
// before last used, once that batch's decode has finished (its `done`
// event), and the decoding thread can queue a batch while the previous one
// still runs.
struct NvjpegDecoder::Handles {
  // The states of one decode, and the event recorded after its work.
  struct Slot {
    nvjpegJpegState_t batched_state = nullptr;
    nvjpegJpegState_t single_state = nullptr;  // with `single`, on first use
    at::cuda::CUDAEvent done;
  };

  Handles(const NvjpegApi& api, int device) : api(api), memory(device) {}
  ~Handles() {
    DestroyBatched();
    for (Slot& slot : slots) {
      if (slot.single_state != nullptr) api.JpegStateDestroy(slot.single_state);
    }
    if (single != nullptr) api.Destroy(single);
  }

  // A handle whose buffers come from LibTorch's caches.
  nvjpegStatus_t Create(nvjpegBackend_t backend, nvjpegHandle_t* handle) {
    nvjpegDevAllocatorV2_t device = memory.DeviceAllocator();
    nvjpegPinnedAllocatorV2_t pinned = memory.PinnedAllocator();
    return api.CreateExV2(backend, &device, &pinned, 0, handle);
  }

  void DestroyBatched() {
    // No state goes while a decode queued with it may still run.
    for (Slot& slot : slots) slot.done.synchronize();
    if (parsed != nullptr) api.JpegStreamDestroy(parsed);
    for (Slot& slot : slots) {
      if (slot.batched_state != nullptr) {
        api.JpegStateDestroy(slot.batched_state);
      }
      slot.batched_state = nullptr;
    }
    if (batched != nullptr) api.Destroy(batched);
    parsed = nullptr;
    batched = nullptr;
  }

  // A batched handle and states of `backend` (the hardware one: and a
  // parsed-stream object to ask it which files it takes); false, nothing
  // kept, when nvJPEG or this GPU lacks it.
  bool TryBatched(nvjpegBackend_t backend) {
    DestroyBatched();
    bool ok = Create(backend, &batched) == NVJPEG_STATUS_SUCCESS;
    for (Slot& slot : slots) {
      ok = ok && api.JpegStateCreate(batched, &slot.batched_state) ==
                     NVJPEG_STATUS_SUCCESS;
    }
    // The hardware backend is created on GPUs without the engine too; a
    // batch initialisation is what fails there.
    ok = ok && api.DecodeBatchedInitialize(batched, slots[0].batched_state, 1,
                                           1, NVJPEG_OUTPUT_RGBI) ==
                   NVJPEG_STATUS_SUCCESS;
    hardware = backend == NVJPEG_BACKEND_HARDWARE;
    if (ok && hardware) {
      ok = api.JpegStreamCreate(batched, &parsed) == NVJPEG_STATUS_SUCCESS;
    }
    if (!ok) {
      DestroyBatched();
      hardware = false;
    }
    return ok;
  }

  // Makes the CUDA batched decoder (GPU-assisted Huffman decoding, else the
  // default); throws when neither can be made.
  void UseCudaBackend(const std::string& where) {
    if (!TryBatched(NVJPEG_BACKEND_GPU_HYBRID) &&
        !TryBatched(NVJPEG_BACKEND_DEFAULT)) {
      throw std::runtime_error("--gpu-decode: nvJPEG (" + api.path +
                               ") could not make a batched decoder on " +
                               where);
    }
  }

  // Whether the batched decoder takes `jpeg`: all do on the CUDA backend;
  // the hardware one takes only single-scan baseline files of some chroma
  // subsamplings, and says which.
  bool BatchedTakes(const std::vector<uint8_t>& jpeg) {
    if (!hardware) return true;
    int unsupported = 1;
    return api.JpegStreamParse(batched, jpeg.data(), jpeg.size(),
                               /*save_metadata=*/0, /*save_stream=*/0,
                               parsed) == NVJPEG_STATUS_SUCCESS &&
           api.DecodeBatchedSupported(batched, parsed, &unsupported) ==
               NVJPEG_STATUS_SUCCESS &&
           unsupported == 0;
  }

  // The slot of the next decode, once the decode that last used it has
  // finished on the GPU (it was queued two decodes ago).
  Slot& NextSlot() {
    Slot& slot = slots[next_slot];
    next_slot = 1 - next_slot;
    slot.done.synchronize();
    return slot;
  }

  // The handle that decodes an image at a time, and `slot`'s state for it,
  // made on first use.
  void EnsureSingle(Slot& slot) {
    if (single == nullptr) {
      Check(Create(NVJPEG_BACKEND_DEFAULT, &single), "nvjpegCreateExV2");
    }
    if (slot.single_state == nullptr) {
      Check(api.JpegStateCreate(single, &slot.single_state),
            "nvjpegJpegStateCreate");
    }
  }

  const NvjpegApi& api;
  // Declared before the handles, so destroyed after them: their frees
  // come back here.
  NvjpegMemory memory;
  nvjpegHandle_t batched = nullptr;
  nvjpegJpegStream_t parsed = nullptr;  // the hardware backend's only
  bool hardware = false;
  nvjpegHandle_t single = nullptr;
  std::array<Slot, 2> slots;
  int next_slot = 0;
};

NvjpegDecoder::NvjpegDecoder(std::shared_ptr<const NvjpegApi> api,
                             const torch::Device& device)
    : api_(std::move(api)), device_(device) {
  if (!device_.is_cuda()) {
    throw std::invalid_argument("--gpu-decode decodes on a CUDA device, not " +
                                device_.str());
  }
  const c10::cuda::CUDAGuard on_device(device_.index());
  handles_ = std::make_unique<Handles>(*api_, c10::cuda::current_device());
  if (!handles_->TryBatched(NVJPEG_BACKEND_HARDWARE)) {
    handles_->UseCudaBackend(device_.str());
  }
}

NvjpegDecoder::~NvjpegDecoder() = default;

std::string NvjpegDecoder::backend() const {
  return handles_->hardware ? "hardware" : "cuda";
}

DecodedBatch NvjpegDecoder::Decode(
    const std::vector<const std::vector<uint8_t>*>& jpegs) {
  const c10::cuda::CUDAGuard on_device(device_.index());
  const NvjpegApi& api = *api_;
  const size_t n = jpegs.size();
  DecodedBatch out;
  out.images.resize(n);
  out.errors.resize(n);
  // Sizes first (a header parse on the CPU), so that one buffer holds all.
  int64_t total = 0;
  std::vector<size_t> decodable;
  for (size_t i = 0; i < n; ++i) {
    int components = 0;
    nvjpegChromaSubsampling_t subsampling;
    int widths[NVJPEG_MAX_COMPONENT] = {0};
    int heights[NVJPEG_MAX_COMPONENT] = {0};
    const nvjpegStatus_t status =
        api.GetImageInfo(handles_->batched, jpegs[i]->data(), jpegs[i]->size(),
                         &components, &subsampling, widths, heights);
    if (status != NVJPEG_STATUS_SUCCESS) {
      out.errors[i] = "nvJPEG cannot read its header: " + StatusName(status);
    } else if (components != 1 && components != 3) {
      out.errors[i] =
          "nvJPEG decodes 1 or 3 components, not " + std::to_string(components);
    } else if (widths[0] <= 0 || heights[0] <= 0) {
      out.errors[i] = "empty JPEG";
    } else {
      out.images[i] = {total, widths[0], heights[0]};
      total += int64_t{widths[0]} * heights[0] * 3;
      decodable.push_back(i);
    }
  }
  out.pixels = torch::empty(
      {total}, torch::TensorOptions(torch::kUInt8).device(device_));
  if (decodable.empty()) return out;

  uint8_t* base = out.pixels.data_ptr<uint8_t>();
  auto destination = [&](size_t i) {
    nvjpegImage_t d{};
    d.channel[0] = base + out.images[i].offset;
    d.pitch[0] = static_cast<size_t>(out.images[i].width) * 3;
    return d;
  };
  const c10::cuda::CUDAStream current =
      c10::cuda::getCurrentCUDAStream(device_.index());
  const cudaStream_t stream = current.stream();
  handles_->memory.UseStream(stream);
  Handles::Slot& slot = handles_->NextSlot();
  // However the decode ends, the slot's states are busy until what was
  // queued with them has run.
  try {
    std::vector<size_t> batched, single;
    for (size_t i : decodable) {
      (handles_->BatchedTakes(*jpegs[i]) ? batched : single).push_back(i);
    }
    // One batched call for the files the batched decoder takes.
    auto decode_batched = [&] {
      std::vector<const unsigned char*> data;
      std::vector<size_t> lengths;
      std::vector<nvjpegImage_t> destinations;
      for (size_t i : batched) {
        data.push_back(jpegs[i]->data());
        lengths.push_back(jpegs[i]->size());
        destinations.push_back(destination(i));
      }
      nvjpegStatus_t status = api.DecodeBatchedInitialize(
          handles_->batched, slot.batched_state,
          static_cast<int>(batched.size()), 1, NVJPEG_OUTPUT_RGBI);
      if (status == NVJPEG_STATUS_SUCCESS) {
        status = api.DecodeBatched(handles_->batched, slot.batched_state,
                                   data.data(), lengths.data(),
                                   destinations.data(), stream);
      }
      return status;
    };
    if (!batched.empty()) {
      nvjpegStatus_t status = decode_batched();
      if (status != NVJPEG_STATUS_SUCCESS && !BlamesTheFile(status) &&
          handles_->hardware) {
        // The hardware decoder failing where it said it could: say so once
        // and go on with the CUDA decoder (the option stays a GPU decode).
        std::fprintf(stderr,
                     "hpcai500-worker: --gpu-decode: nvJPEG's hardware decoder "
                     "failed a batch (%s); using its CUDA decoder\n",
                     StatusName(status).c_str());
        handles_->UseCudaBackend(device_.str());
        status = decode_batched();
      }
      if (status != NVJPEG_STATUS_SUCCESS) {
        if (!BlamesTheFile(status) &&
            status != NVJPEG_STATUS_INVALID_PARAMETER) {
          Check(status, "nvjpegDecodeBatched");
        }
        // Some file of the batch is one the batched call refuses: each file
        // answers for itself.
        single.insert(single.end(), batched.begin(), batched.end());
      }
    }
    // An image at a time: the files the batched decoder does not take.
    if (!single.empty()) handles_->EnsureSingle(slot);
    for (size_t i : single) {
      nvjpegImage_t d = destination(i);
      const nvjpegStatus_t status =
          api.Decode(handles_->single, slot.single_state, jpegs[i]->data(),
                     jpegs[i]->size(), NVJPEG_OUTPUT_RGBI, &d, stream);
      if (BlamesTheFile(status)) {
        out.errors[i] = "nvJPEG cannot decode it: " + StatusName(status);
      } else {
        Check(status, "nvjpegDecode");
      }
    }
  } catch (...) {
    slot.done.record(current);
    throw;
  }
  slot.done.record(current);
  return out;
}

#else  // !HPCAI500_HAVE_NVJPEG

struct NvjpegApi {};
struct NvjpegDecoder::Handles {};

namespace {

[[noreturn]] void BuiltWithout() {
  throw std::runtime_error(
      "--gpu-decode: this worker was built without nvJPEG's header (pip "
      "install nvidia-nvjpeg, scripts/requirements.txt, and reconfigure)");
}

}  // namespace

std::vector<std::string> NvjpegLibraryCandidates() { return {}; }

std::shared_ptr<const NvjpegApi> OpenNvjpeg(
    const std::vector<std::string>& /*candidates*/) {
  BuiltWithout();
}

NvjpegDecoder::NvjpegDecoder(std::shared_ptr<const NvjpegApi> api,
                             const torch::Device& device)
    : api_(std::move(api)), device_(device) {
  BuiltWithout();
}

NvjpegDecoder::~NvjpegDecoder() = default;

std::string NvjpegDecoder::backend() const { return "none"; }

DecodedBatch NvjpegDecoder::Decode(
    const std::vector<const std::vector<uint8_t>*>& /*jpegs*/) {
  BuiltWithout();
}

#endif  // HPCAI500_HAVE_NVJPEG

}  // namespace hpcai500::worker
