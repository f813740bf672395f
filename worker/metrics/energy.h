// Energy a rank consumes per epoch, read from the counters the machine
// exposes: RAPL powercap package domains on CPUs (whole sockets, so a node
// reports them once) and NVML's total-energy counter on GPUs (one device per
// local rank). Where neither can be read, there is no reader and no figure:
// never a fake zero.
//
// Thread-safety: readers and EpochEnergy are not thread-safe; one thread
// (the training loop) uses each.
#ifndef HPCAI500_WORKER_METRICS_ENERGY_H_
#define HPCAI500_WORKER_METRICS_ENERGY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hpcai500::worker {

// A cumulative energy counter.
class EnergyReader {
 public:
  virtual ~EnergyReader() = default;
  // "rapl" or "nvml": the `energy_source` of the events.
  virtual const char* source() const = 0;
  // Joules consumed since an arbitrary origin fixed by the reader, or
  // nullopt when the counter cannot be read now.
  virtual std::optional<double> Joules() = 0;
};

// The RAPL package domains under `powercap_root` (normally
// /sys/class/powercap): every `intel-rapl:N` folder whose `name` starts with
// "package", summed. Counters wrap at `max_energy_range_uj`; a wrap is
// undone as long as Joules() is called at least once per wrap period
// (minutes at full load). Returns null when there is no such domain or one
// cannot be read; then `*note` (never null) says why when the reason is
// worth an operator's attention (a counter that exists but is unreadable,
// e.g. permission denied for non-root), else it is left empty.
std::unique_ptr<EnergyReader> OpenRaplReader(const std::string& powercap_root,
                                             std::string* note);

// The NVML entry points the reader uses, as nvml.h declares them (return
// values are nvmlReturn_t, 0 = NVML_SUCCESS; the device handle is opaque).
// Tests fill it with fakes; LoadNvml() with the real library.
struct NvmlApi {
  using Device = void*;
  std::function<int()> init;      // nvmlInit_v2
  std::function<int()> shutdown;  // nvmlShutdown
  std::function<int(unsigned index, Device* device)>
      device_handle_by_index;  // nvmlDeviceGetHandleByIndex_v2
  std::function<int(Device device, unsigned long long* millijoules)>
      total_energy_consumption;  // nvmlDeviceGetTotalEnergyConsumption
};

// dlopen()s `library` (normally "libnvidia-ml.so.1") and binds NvmlApi to
// it; the library stays loaded for the life of the process. Returns nullopt
// with the reason in `*error` when the library or a symbol is missing.
std::optional<NvmlApi> LoadNvml(const std::string& library, std::string* error);

// Initialises NVML through `api` and reads device `index`'s counter once.
// Returns null with the reason in `*note` when initialisation, the device or
// the counter (NVML_ERROR_NOT_SUPPORTED before Volta) fails. The reader shuts
// NVML down when destroyed.
std::unique_ptr<EnergyReader> OpenNvmlReader(NvmlApi api, unsigned index,
                                             std::string* note);

// The reader for a rank: NVML device `local_rank` on CUDA; on CPU the RAPL
// packages, for local rank 0 only (they measure the whole node). Null when
// absent; `*note` as above.
std::unique_ptr<EnergyReader> OpenEnergyReader(bool cuda, int local_rank,
                                               std::string* note);

// Joules between StartEpoch() and StopEpoch() from an optional reader.
class EpochEnergy {
 public:
  // `reader` may be null: then every epoch's energy is absent.
  explicit EpochEnergy(std::unique_ptr<EnergyReader> reader);

  // The reader's source, or null without a reader.
  const char* source() const;
  void StartEpoch();
  // Reads the counter when `now_seconds` is at least kPollSeconds past the
  // previous read, so wrapping RAPL counters are followed through long
  // epochs. Cheap otherwise; call it every step.
  void Poll(double now_seconds);
  // Joules since StartEpoch(), or nullopt when absent or a read failed.
  std::optional<double> StopEpoch();

  static constexpr double kPollSeconds = 5.0;

 private:
  std::unique_ptr<EnergyReader> reader_;
  std::optional<double> start_;
  bool failed_ = false;
  double last_poll_ = -1e300;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_METRICS_ENERGY_H_
