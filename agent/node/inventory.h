// The node inventory an agent sends in Register (issue 14): CPU model and
// cores, memory, GPUs with their model, memory and active NVLink links, the
// GPU driver, and the versions of the kernel, the OS, NCCL and MPI (the
// worker's come from agent/node/worker_version.h). GPUs come from NVML, loaded
// at run time with dlopen so that the agent runs on nodes without a driver;
// NCCL and MPI are asked the same way. Nothing here is fatal: what cannot be
// read stays empty. Every file read is bounded, and the result is cut to
// the bounds the coordinator accepts (common/inventory.h).
//
// Thread-safe: free functions; ReadInventory and ReadNvmlGpus load and
// unload shared libraries, so call them from one thread at a time.
#ifndef HPCAI500_AGENT_NODE_INVENTORY_H_
#define HPCAI500_AGENT_NODE_INVENTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// Where the inventory is read from: files and shared libraries (a name
// dlopen searches for, or a path). Tests point them at fixtures and fakes.
struct InventorySources {
  std::string cpuinfo = "/proc/cpuinfo";
  std::string meminfo = "/proc/meminfo";
  std::string os_release = "/etc/os-release";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string nccl_library = "libnccl.so.2";
  std::string mpi_library = "libmpi.so.40";  // OpenMPI 3 and later
};

// What NVML reported. `loaded` is false when the library or one of its
// functions is missing or nvmlInit fails (no driver): then nothing else is
// set and `why` says which, for the log.
struct NvmlGpus {
  bool loaded = false;
  std::string why;
  std::string driver_version;
  std::vector<v1::Device> devices;  // kind "cuda", in NVML's index order
};

// ReadNvml (agent/node/nvml.h) of `library`, its GPUs as devices of kind
// "cuda", at most kMaxInventoryDevices of them.
NvmlGpus ReadNvmlGpus(const std::string& library);

// The inventory of this node from `sources`, cut to the coordinator's
// bounds (FitInventory). cpu_cores counts the online CPUs of the node (not
// only those this process may use). `nvml` is ReadNvmlGpus(
// sources.nvml_library), read once by the caller (it also counts the
// agent's GPUs). The agent's own version is the caller's to add.
v1::Inventory ReadInventory(const InventorySources& sources,
                            const NvmlGpus& nvml);

// Pure parsers over the text of the files above, for tests.
//
// The CPU model: the first "model name" line of /proc/cpuinfo (x86), else
// "Model", "cpu model" or "cpu" (other architectures); "" when none.
std::string ParseCpuModel(absl::string_view cpuinfo);
// MemTotal of /proc/meminfo in bytes; 0 when absent or malformed.
int64_t ParseMemTotalBytes(absl::string_view meminfo);
// PRETTY_NAME of os-release(5), unquoted; "" when absent.
std::string ParseOsPrettyName(absl::string_view os_release);
// ncclGetVersion's code as "2.21.5" (NCCL_VERSION_CODE is
// major*10000+minor*100+patch from 2.9 on, major*1000+minor*100+patch
// before).
std::string FormatNcclVersion(int code);
// The first line of MPI_Get_library_version's text up to its first comma,
// e.g. "Open MPI v4.1.4" of "Open MPI v4.1.4, package: Debian ...".
std::string ShortMpiVersion(absl::string_view library_version);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_NODE_INVENTORY_H_
