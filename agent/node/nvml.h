// The GPUs of this node as the driver's NVML library reports them: driver
// version, and each GPU's name, total memory and active NVLink links. NVML
// is loaded at run time with dlopen, so the agent runs on nodes without a
// driver; a missing library, function or driver is an answer (`why`), not an
// error. Standard library only: the inventory (agent/node/inventory.h) builds
// its devices from it, and the GPU tests of a worker-only build read the real
// driver through it.
//
// Thread-safe: a free function, but it loads and unloads the library: call
// it from one thread at a time.
#ifndef HPCAI500_AGENT_NODE_NVML_H_
#define HPCAI500_AGENT_NODE_NVML_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hpcai500::agent {

struct NvmlGpu {
  int index = 0;             // NVML's index
  std::string model;         // e.g. "NVIDIA H200"; "" when NVML cannot tell
  int64_t memory_bytes = 0;  // total; 0 when NVML cannot tell
  int nvlink_links = 0;      // active NVLink links
};

// What NVML reported. `loaded` is false when the library or one of its
// functions is missing or nvmlInit fails (no driver): then nothing else is
// set and `why` says which, for the log.
struct NvmlReading {
  bool loaded = false;
  std::string why;
  std::string driver_version;
  std::vector<NvmlGpu> gpus;  // in NVML's index order
};

// Asks NVML in `library` (a name dlopen searches for, or a path) for the
// driver version and the first `max_gpus` GPUs; active NVLink links are 0
// when the GPU has none or the library lacks nvmlDeviceGetNvLinkState.
// Shuts NVML down and unloads the library before returning.
NvmlReading ReadNvml(const std::string& library, int max_gpus);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_NODE_NVML_H_
