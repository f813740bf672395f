// This node's inventory read from /proc, /etc/os-release, NVML and the NCCL
// and MPI libraries, cut to the coordinator's bounds.
#include "agent/node/inventory.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/node/internal/shared_library.h"
#include "agent/node/nvml.h"
#include "agent/system/files.h"
#include "common/inventory.h"
#include "common/vocabulary.h"

namespace hpcai500::agent {
namespace {

using agent_internal::FromBuffer;
using agent_internal::SharedLibrary;

// /proc/cpuinfo names the model in its first processor's block; the rest
// repeats it per CPU (hundreds of KiB on a large node).
constexpr size_t kMaxCpuinfoBytes = 64 * 1024;
constexpr size_t kMaxSmallFileBytes = 16 * 1024;  // meminfo, os-release
// MPICH's MPI_MAX_LIBRARY_VERSION_STRING (OpenMPI's is 256).
constexpr int kMpiVersionBufferBytes = 8192;

// NCCL's and MPI's version calls; MPI_Get_library_version may be called
// before MPI_Init.
using NcclVersionFn = int(int*);
using MpiLibraryVersionFn = int(char*, int*);

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
  const NvmlReading reading = ReadNvml(library_name, kMaxInventoryDevices);
  NvmlGpus gpus;
  gpus.loaded = reading.loaded;
  gpus.why = reading.why;
  gpus.driver_version = reading.driver_version;
  for (const NvmlGpu& gpu : reading.gpus) {
    v1::Device& device = gpus.devices.emplace_back();
    device.set_index(gpu.index);
    device.set_kind(std::string(Name(Device::kCuda)));
    device.set_model(gpu.model);
    device.set_memory_bytes(gpu.memory_bytes);
    device.set_nvlink_links(gpu.nvlink_links);
  }
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
