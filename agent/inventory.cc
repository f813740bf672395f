#include "agent/inventory.h"

#include <dlfcn.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/files.h"
#include "common/inventory.h"
#include "common/vocabulary.h"

namespace hpcai500::agent {
namespace {

// /proc/cpuinfo names the model in its first processor's block; the rest
// repeats it per CPU (hundreds of KiB on a large node).
constexpr size_t kMaxCpuinfoBytes = 64 * 1024;
constexpr size_t kMaxSmallFileBytes = 16 * 1024;  // meminfo, os-release
// MPICH's MPI_MAX_LIBRARY_VERSION_STRING (OpenMPI's is 256).
constexpr int kMpiVersionBufferBytes = 8192;

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
// NCCL's and MPI's version calls; MPI_Get_library_version may be called
// before MPI_Init.
using NcclVersionFn = int(int*);
using MpiLibraryVersionFn = int(char*, int*);

// A library opened with dlopen for as long as the object lives.
class SharedLibrary {
 public:
  // `keep_loaded`: never unloaded, for a library whose static state
  // (OpenMPI's) is not made to be torn down in a running process.
  SharedLibrary(const std::string& name, bool keep_loaded)
      : handle_(::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL |
                                           (keep_loaded ? RTLD_NODELETE : 0))) {
    if (handle_ == nullptr) {
      const char* error = ::dlerror();
      error_ = error != nullptr ? error : absl::StrCat("cannot load ", name);
    }
  }
  ~SharedLibrary() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  // Why it did not load (dlerror's text).
  const std::string& error() const { return error_; }

  // The function `symbol`, or null when the library lacks it.
  template <typename Fn>
  Fn* Find(const char* symbol) const {
    if (handle_ == nullptr) return nullptr;
    return reinterpret_cast<Fn*>(::dlsym(handle_, symbol));
  }

 private:
  void* handle_;
  std::string error_;
};

// A C string NVML or MPI wrote into `buffer`, even without its terminator.
std::string FromBuffer(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

// The functions ReadNvmlGpus calls, all found or none; nvlink_state is
// optional (null: no NVLink is read).
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

// Device `index` as NVML describes it; the model or memory stay unset when
// NVML cannot tell.
v1::Device ReadNvmlDevice(const NvmlApi& api, unsigned index) {
  v1::Device device;
  device.set_index(static_cast<int>(index));
  device.set_kind(std::string(Name(Device::kCuda)));
  NvmlDevice handle = nullptr;
  if (api.handle(index, &handle) != kNvmlSuccess) return device;
  char name[kNvmlNameBufferBytes] = {};
  if (api.name(handle, name, sizeof(name)) == kNvmlSuccess) {
    device.set_model(FromBuffer(name, sizeof(name)));
  }
  NvmlMemory memory = {};
  if (api.memory(handle, &memory) == kNvmlSuccess) {
    device.set_memory_bytes(static_cast<int64_t>(
        std::min<unsigned long long>(memory.total, INT64_MAX)));
  }
  device.set_nvlink_links(ActiveNvLinks(api, handle));
  return device;
}

std::string KernelRelease() {
  struct utsname name = {};
  if (::uname(&name) != 0) return "";
  return FromBuffer(name.release, sizeof(name.release));
}

int OnlineCpus() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) return static_cast<int>(std::min<long>(online, INT32_MAX));
  return static_cast<int>(std::thread::hardware_concurrency());
}

std::string NcclVersion(const std::string& library_name) {
  SharedLibrary library(library_name, /*keep_loaded=*/false);
  auto* get_version = library.Find<NcclVersionFn>("ncclGetVersion");
  int code = 0;
  if (get_version == nullptr || get_version(&code) != 0 || code <= 0) {
    return "";
  }
  return FormatNcclVersion(code);
}

std::string MpiVersion(const std::string& library_name) {
  SharedLibrary library(library_name, /*keep_loaded=*/true);
  auto* get_version =
      library.Find<MpiLibraryVersionFn>("MPI_Get_library_version");
  if (get_version == nullptr) return "";
  std::string buffer(kMpiVersionBufferBytes, '\0');
  int length = 0;
  if (get_version(buffer.data(), &length) != 0) return "";
  return ShortMpiVersion(FromBuffer(buffer.data(), buffer.size()));
}

// `value` of the first "key : value" line of `text` whose key is `key`.
std::string ColonField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (absl::StripAsciiWhitespace(kv.first) == key) {
      return std::string(absl::StripAsciiWhitespace(kv.second));
    }
  }
  return "";
}

void SetIfKnown(google::protobuf::Map<std::string, std::string>& versions,
                const std::string& name, std::string value) {
  if (!value.empty()) versions[name] = std::move(value);
}

}  // namespace

std::string ParseCpuModel(absl::string_view cpuinfo) {
  for (absl::string_view key : {"model name", "Model", "cpu model", "cpu"}) {
    std::string model = ColonField(cpuinfo, key);
    if (!model.empty()) return model;
  }
  return "";
}

int64_t ParseMemTotalBytes(absl::string_view meminfo) {
  // "MemTotal:       16303960 kB"
  // The words point into `field`, which must outlive them.
  const std::string field = ColonField(meminfo, "MemTotal");
  std::vector<absl::string_view> words =
      absl::StrSplit(field, ' ', absl::SkipWhitespace());
  int64_t kib = 0;
  if (words.size() != 2 || words[1] != "kB" ||
      !absl::SimpleAtoi(words[0], &kib) || kib <= 0 || kib > INT64_MAX / 1024) {
    return 0;
  }
  return kib * 1024;
}

std::string ParseOsPrettyName(absl::string_view os_release) {
  for (absl::string_view line : absl::StrSplit(os_release, '\n')) {
    if (!absl::ConsumePrefix(&line, "PRETTY_NAME=")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (line.size() >= 2 && (line.front() == '"' || line.front() == '\'') &&
        line.back() == line.front()) {
      line = line.substr(1, line.size() - 2);
    }
    return std::string(line);
  }
  return "";
}

std::string FormatNcclVersion(int code) {
  if (code <= 0) return "";
  const int major_unit = code >= 10000 ? 10000 : 1000;
  return absl::StrCat(code / major_unit, ".", (code % major_unit) / 100, ".",
                      code % 100);
}

std::string ShortMpiVersion(absl::string_view library_version) {
  absl::string_view line = library_version.substr(
      0, std::min(library_version.find('\n'), library_version.find(',')));
  // MPICH writes "MPICH Version:\t4.0.2": tabs become spaces.
  std::string text(absl::StripAsciiWhitespace(line));
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

NvmlGpus ReadNvmlGpus(const std::string& library_name) {
  NvmlGpus gpus;
  SharedLibrary library(library_name, /*keep_loaded=*/false);
  if (!library.loaded()) {
    gpus.why = library.error();
    return gpus;
  }
  NvmlApi api;
  std::string missing;
  if (!FindNvmlApi(library, &api, &missing)) {
    gpus.why = absl::StrCat(library_name, " has no ", missing);
    return gpus;
  }
  api.nvlink_state =
      library.Find<NvmlNvLinkStateFn>("nvmlDeviceGetNvLinkState");
  if (const int code = api.init(); code != kNvmlSuccess) {
    gpus.why =
        absl::StrCat("nvmlInit failed with NVML error ", code, " (no driver?)");
    return gpus;
  }
  gpus.loaded = true;
  char driver[kNvmlDriverBufferBytes] = {};
  if (api.driver(driver, sizeof(driver)) == kNvmlSuccess) {
    gpus.driver_version = FromBuffer(driver, sizeof(driver));
  }
  unsigned count = 0;
  if (api.count(&count) == kNvmlSuccess) {
    count = std::min<unsigned>(count, kMaxInventoryDevices);
    for (unsigned i = 0; i < count; ++i) {
      gpus.devices.push_back(ReadNvmlDevice(api, i));
    }
  }
  api.shutdown();
  return gpus;
}

v1::Inventory ReadInventory(const InventorySources& sources,
                            const NvmlGpus& nvml) {
  v1::Inventory inventory;
  inventory.set_cpu_model(
      ParseCpuModel(ReadFileHead(sources.cpuinfo, kMaxCpuinfoBytes)));
  inventory.set_cpu_cores(OnlineCpus());
  inventory.set_memory_bytes(
      ParseMemTotalBytes(ReadFileHead(sources.meminfo, kMaxSmallFileBytes)));
  inventory.set_driver_version(nvml.driver_version);
  for (const v1::Device& device : nvml.devices) {
    *inventory.add_devices() = device;
  }
  auto& versions = *inventory.mutable_versions();
  SetIfKnown(versions, "kernel", KernelRelease());
  SetIfKnown(
      versions, "os",
      ParseOsPrettyName(ReadFileHead(sources.os_release, kMaxSmallFileBytes)));
  SetIfKnown(versions, "nccl", NcclVersion(sources.nccl_library));
  SetIfKnown(versions, "mpi", MpiVersion(sources.mpi_library));
  FitInventory(&inventory);
  return inventory;
}

}  // namespace hpcai500::agent
