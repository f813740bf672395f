#include "worker/metrics/energy.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

namespace hpcai500::worker {

namespace {

// Reads a whole small file. Returns false with "cannot read PATH: reason".
bool ReadSmallFile(const std::string& path, std::string* out,
                   std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  out->clear();
  char buffer[256];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

bool ReadUint64(const std::string& path, uint64_t* value, std::string* error) {
  std::string text;
  if (!ReadSmallFile(path, &text, error)) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || (*end != '\0' && *end != '\n')) {
    *error = path + ": not a counter: '" + text + "'";
    return false;
  }
  *value = v;
  return true;
}

// One RAPL package domain: a microjoule counter that wraps at max_range.
struct RaplDomain {
  std::string energy_path;
  uint64_t max_range = 0;
  uint64_t last = 0;
};

class RaplReader final : public EnergyReader {
 public:
  explicit RaplReader(std::vector<RaplDomain> domains)
      : domains_(std::move(domains)) {}

  const char* source() const override { return "rapl"; }

  std::optional<double> Joules() override {
    for (RaplDomain& d : domains_) {
      uint64_t now = 0;
      std::string error;
      if (!ReadUint64(d.energy_path, &now, &error)) return std::nullopt;
      // The counter runs from 0 to max_range and starts again at 0.
      total_uj_ += now >= d.last ? static_cast<double>(now - d.last)
                                 : static_cast<double>(d.max_range - d.last) +
                                       static_cast<double>(now);
      d.last = now;
    }
    return total_uj_ * 1e-6;
  }

 private:
  std::vector<RaplDomain> domains_;
  double total_uj_ = 0;
};

class NvmlReader final : public EnergyReader {
 public:
  NvmlReader(NvmlApi api, NvmlApi::Device device)
      : api_(std::move(api)), device_(device) {}
  ~NvmlReader() override {
    if (api_.shutdown) api_.shutdown();
  }

  const char* source() const override { return "nvml"; }

  std::optional<double> Joules() override {
    unsigned long long millijoules = 0;
    if (api_.total_energy_consumption(device_, &millijoules) != 0) {
      return std::nullopt;
    }
    return static_cast<double>(millijoules) * 1e-3;
  }

 private:
  NvmlApi api_;
  NvmlApi::Device device_;
};

// nvml.h's signatures, for dlsym.
using NvmlVoidFn = int (*)();
using NvmlHandleFn = int (*)(unsigned, NvmlApi::Device*);
using NvmlEnergyFn = int (*)(NvmlApi::Device, unsigned long long*);

}  // namespace

std::unique_ptr<EnergyReader> OpenRaplReader(const std::string& powercap_root,
                                             std::string* note) {
  note->clear();
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(powercap_root, ec);
  if (ec) return nullptr;  // no powercap on this machine
  // Top-level zones only: intel-rapl:0:0 (core, dram) is inside package 0.
  static const std::regex kTopLevelZone("intel-rapl:[0-9]+");
  std::vector<std::string> zones;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, kTopLevelZone)) zones.push_back(name);
  }
  std::sort(zones.begin(), zones.end());
  std::vector<RaplDomain> domains;
  for (const std::string& zone : zones) {
    const std::string dir = powercap_root + "/" + zone;
    std::string name, error;
    // psys and other platform zones overlap the packages: skip them.
    if (!ReadSmallFile(dir + "/name", &name, &error) ||
        name.rfind("package", 0) != 0) {
      continue;
    }
    RaplDomain d;
    d.energy_path = dir + "/energy_uj";
    if (!ReadUint64(dir + "/max_energy_range_uj", &d.max_range, &error) ||
        !ReadUint64(d.energy_path, &d.last, &error)) {
      *note = "RAPL energy not reported: " + error;
      return nullptr;
    }
    domains.push_back(std::move(d));
  }
  if (domains.empty()) return nullptr;
  return std::make_unique<RaplReader>(std::move(domains));
}

std::optional<NvmlApi> LoadNvml(const std::string& library,
                                std::string* error) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    *error = "cannot load " + library + ": " + (why ? why : "unknown error");
    return std::nullopt;
  }
  std::string missing;  // the first symbol not found
  auto symbol = [&](const char* name) -> void* {
    void* s = ::dlsym(handle, name);
    if (s == nullptr && missing.empty()) missing = name;
    return s;
  };
  auto init = reinterpret_cast<NvmlVoidFn>(symbol("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlVoidFn>(symbol("nvmlShutdown"));
  auto by_index =
      reinterpret_cast<NvmlHandleFn>(symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto energy = reinterpret_cast<NvmlEnergyFn>(
      symbol("nvmlDeviceGetTotalEnergyConsumption"));
  if (!missing.empty()) {
    *error = library + " has no " + missing;
    return std::nullopt;
  }
  NvmlApi api;
  api.init = init;
  api.shutdown = shutdown;
  api.device_handle_by_index = by_index;
  api.total_energy_consumption = energy;
  return api;
}

std::unique_ptr<EnergyReader> OpenNvmlReader(NvmlApi api, unsigned index,
                                             std::string* note) {
  note->clear();
  if (const int rc = api.init(); rc != 0) {
    *note =
        "NVML energy not reported: nvmlInit_v2 returned " + std::to_string(rc);
    return nullptr;
  }
  auto fail = [&](const std::string& why) -> std::unique_ptr<EnergyReader> {
    *note = "NVML energy not reported: " + why;
    api.shutdown();
    return nullptr;
  };
  NvmlApi::Device device = nullptr;
  if (const int rc = api.device_handle_by_index(index, &device); rc != 0) {
    return fail("device " + std::to_string(index) + ": returned " +
                std::to_string(rc));
  }
  unsigned long long millijoules = 0;
  if (const int rc = api.total_energy_consumption(device, &millijoules);
      rc != 0) {
    return fail("device " + std::to_string(index) +
                ": nvmlDeviceGetTotalEnergyConsumption returned " +
                std::to_string(rc) + (rc == 3 ? " (not supported)" : ""));
  }
  return std::make_unique<NvmlReader>(std::move(api), device);
}

std::unique_ptr<EnergyReader> OpenEnergyReader(bool cuda, int local_rank,
                                               std::string* note) {
  note->clear();
  if (cuda) {
    std::string error;
    std::optional<NvmlApi> api = LoadNvml("libnvidia-ml.so.1", &error);
    if (!api) {
      *note = "NVML energy not reported: " + error;
      return nullptr;
    }
    return OpenNvmlReader(std::move(*api), static_cast<unsigned>(local_rank),
                          note);
  }
  if (local_rank != 0) return nullptr;
  return OpenRaplReader("/sys/class/powercap", note);
}

EpochEnergy::EpochEnergy(std::unique_ptr<EnergyReader> reader)
    : reader_(std::move(reader)) {}

const char* EpochEnergy::source() const {
  return reader_ ? reader_->source() : nullptr;
}

void EpochEnergy::StartEpoch() {
  failed_ = false;
  start_.reset();
  if (reader_) start_ = reader_->Joules();
}

void EpochEnergy::Poll(double now_seconds) {
  if (!reader_ || now_seconds - last_poll_ < kPollSeconds) return;
  last_poll_ = now_seconds;
  if (!reader_->Joules()) failed_ = true;
}

std::optional<double> EpochEnergy::StopEpoch() {
  if (!reader_ || !start_ || failed_) return std::nullopt;
  const std::optional<double> end = reader_->Joules();
  if (!end) return std::nullopt;
  return *end - *start_;
}

}  // namespace hpcai500::worker
