// The driver's NVML loaded at run time: its driver version and each GPU.
#include "agent/node/nvml.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "agent/node/internal/shared_library.h"

namespace hpcai500::agent {
namespace {

using agent_internal::FromBuffer;
using agent_internal::SharedLibrary;

// NVML's C API, declared here so that no header or driver is needed to
// build: return codes are an enum (0 is NVML_SUCCESS), a device is an
// opaque handle, nvmlMemory_t is three unsigned long longs.
constexpr int kNvmlSuccess = 0;
constexpr unsigned kNvmlNameBufferBytes = 96;    // ..._NAME_V2_BUFFER_SIZE
constexpr unsigned kNvmlDriverBufferBytes = 80;  // ..._DRIVER_VERSION_...
constexpr unsigned kNvmlNvLinkMaxLinks = 18;     // NVML_NVLINK_MAX_LINKS
constexpr int kNvmlFeatureEnabled = 1;           // NVML_FEATURE_ENABLED
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlInitFn = int();
using NvmlShutdownFn = int();
using NvmlCountFn = int(unsigned*);
using NvmlHandleFn = int(unsigned, NvmlDevice*);
using NvmlNameFn = int(NvmlDevice, char*, unsigned);
using NvmlMemoryFn = int(NvmlDevice, NvmlMemory*);
using NvmlDriverFn = int(char*, unsigned);
using NvmlNvLinkStateFn = int(NvmlDevice, unsigned, int*);

// The functions ReadNvml calls, all found or none; nvlink_state is optional
// (null: no NVLink is read).
struct NvmlApi {
  NvmlInitFn* init = nullptr;
  NvmlShutdownFn* shutdown = nullptr;
  NvmlCountFn* count = nullptr;
  NvmlHandleFn* handle = nullptr;
  NvmlNameFn* name = nullptr;
  NvmlMemoryFn* memory = nullptr;
  NvmlDriverFn* driver = nullptr;
  NvmlNvLinkStateFn* nvlink_state = nullptr;
};

// *fn = `symbol` of `library`; false, with the symbol in *missing, when the
// library lacks it.
template <typename Fn>
bool FindFunction(const SharedLibrary& library, const char* symbol, Fn** fn,
                  std::string* missing) {
  *fn = library.Find<Fn>(symbol);
  if (*fn == nullptr) *missing = symbol;
  return *fn != nullptr;
}

// The API in `library`; false, with a missing function's name in *missing,
// unless every function is there.
bool FindNvmlApi(const SharedLibrary& library, NvmlApi* api,
                 std::string* missing) {
  return FindFunction(library, "nvmlInit_v2", &api->init, missing) &&
         FindFunction(library, "nvmlShutdown", &api->shutdown, missing) &&
         FindFunction(library, "nvmlDeviceGetCount_v2", &api->count, missing) &&
         FindFunction(library, "nvmlDeviceGetHandleByIndex_v2", &api->handle,
                      missing) &&
         FindFunction(library, "nvmlDeviceGetName", &api->name, missing) &&
         FindFunction(library, "nvmlDeviceGetMemoryInfo", &api->memory,
                      missing) &&
         FindFunction(library, "nvmlSystemGetDriverVersion", &api->driver,
                      missing);
}

// The links of `handle` NVML calls active. A link NVML cannot tell of (a GPU
// without NVLink answers NOT_SUPPORTED, a link past the GPU's last
// INVALID_ARGUMENT) counts as inactive, as does everything without
// nvmlDeviceGetNvLinkState.
int ActiveNvLinks(const NvmlApi& api, NvmlDevice handle) {
  if (api.nvlink_state == nullptr) return 0;
  int active = 0;
  for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
    int state = 0;
    if (api.nvlink_state(handle, link, &state) == kNvmlSuccess &&
        state == kNvmlFeatureEnabled) {
      ++active;
    }
  }
  return active;
}

// GPU `index` as NVML describes it; the model or memory stay unset when NVML
// cannot tell.
NvmlGpu ReadGpu(const NvmlApi& api, unsigned index) {
  NvmlGpu gpu;
  gpu.index = static_cast<int>(index);
  NvmlDevice handle = nullptr;
  if (api.handle(index, &handle) != kNvmlSuccess) return gpu;
  char name[kNvmlNameBufferBytes] = {};
  if (api.name(handle, name, sizeof(name)) == kNvmlSuccess) {
    gpu.model = FromBuffer(name, sizeof(name));
  }
  NvmlMemory memory = {};
  if (api.memory(handle, &memory) == kNvmlSuccess) {
    gpu.memory_bytes = static_cast<int64_t>(
        std::min<unsigned long long>(memory.total, INT64_MAX));
  }
  gpu.nvlink_links = ActiveNvLinks(api, handle);
  return gpu;
}

}  // namespace

NvmlReading ReadNvml(const std::string& library_name, int max_gpus) {
  NvmlReading reading;
  SharedLibrary library(library_name, /*keep_loaded=*/false);
  if (!library.loaded()) {
    reading.why = library.error();
    return reading;
  }
  NvmlApi api;
  std::string missing;
  if (!FindNvmlApi(library, &api, &missing)) {
    reading.why = library_name + " has no " + missing;
    return reading;
  }
  api.nvlink_state =
      library.Find<NvmlNvLinkStateFn>("nvmlDeviceGetNvLinkState");
  if (const int code = api.init(); code != kNvmlSuccess) {
    reading.why = "nvmlInit failed with NVML error " + std::to_string(code) +
                  " (no driver?)";
    return reading;
  }
  reading.loaded = true;
  char driver[kNvmlDriverBufferBytes] = {};
  if (api.driver(driver, sizeof(driver)) == kNvmlSuccess) {
    reading.driver_version = FromBuffer(driver, sizeof(driver));
  }
  unsigned count = 0;
  if (api.count(&count) == kNvmlSuccess) {
    count =
        std::min<unsigned>(count, static_cast<unsigned>(std::max(max_gpus, 0)));
    for (unsigned i = 0; i < count; ++i) {
      reading.gpus.push_back(ReadGpu(api, i));
    }
  }
  api.shutdown();
  return reading;
}

}  // namespace hpcai500::agent
