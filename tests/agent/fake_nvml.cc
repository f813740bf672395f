// A stand-in for libnvidia-ml.so.1, loaded by the inventory tests in place
// of the driver's: two "NVIDIA H200" of 141 GiB each under driver 550.54.15.
// Built with FAKE_NVML_NO_DRIVER, nvmlInit fails as it does on a node whose
// driver is not loaded.
#include <cstdio>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;  // NVML_ERROR_INVALID_ARGUMENT
constexpr int kDriverNotLoaded = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
constexpr unsigned kDevices = 2;

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

}  // extern "C"
