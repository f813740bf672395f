// A stand-in for libnvidia-ml.so.1, loaded by the inventory tests in place
// of the driver's: two "NVIDIA H200" of 141 GiB each under driver 550.54.15;
// GPU 0 has 18 NVLink links of which 12 are active, GPU 1 answers
// NOT_SUPPORTED (no NVLink). Built with FAKE_NVML_NO_DRIVER, nvmlInit fails
// as it does on a node whose driver is not loaded; with FAKE_NVML_NO_NVLINK
// there is no nvmlDeviceGetNvLinkState (an old driver).
#include <cstdio>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;  // NVML_ERROR_INVALID_ARGUMENT
constexpr int kNotSupported = 3;     // NVML_ERROR_NOT_SUPPORTED
constexpr int kDriverNotLoaded = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
constexpr unsigned kDevices = 2;
constexpr unsigned kGpu0Links = 18;
constexpr unsigned kGpu0ActiveLinks = 12;

}  // namespace

extern "C" {

struct nvmlDevice_st {
  unsigned index;
};
struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

static nvmlDevice_st devices[kDevices] = {{0}, {1}};

int nvmlInit_v2() {
#ifdef FAKE_NVML_NO_DRIVER
  return kDriverNotLoaded;
#else
  return kSuccess;
#endif
}

int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = kDevices;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (index >= kDevices) return kInvalidArgument;
  *device = &devices[index];
  return kSuccess;
}

int nvmlDeviceGetName(nvmlDevice_st*, char* name, unsigned length) {
  std::snprintf(name, length, "NVIDIA H200");
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_st*, nvmlMemory_st* memory) {
  memory->total = 141ull << 30;
  memory->used = 1ull << 30;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "550.54.15");
  return kSuccess;
}

#ifndef FAKE_NVML_NO_NVLINK
// isActive is an nvmlEnableState_t: 0 disabled, 1 enabled.
int nvmlDeviceGetNvLinkState(nvmlDevice_st* device, unsigned link,
                             int* is_active) {
  if (device->index != 0) return kNotSupported;
  if (link >= kGpu0Links) return kInvalidArgument;
  *is_active = link < kGpu0ActiveLinks ? 1 : 0;
  return kSuccess;
}
#endif

}  // extern "C"
