// The worker's command line and rank environment, resolved against the
// workload registry into one WorkerOptions. No LibTorch here.
//
// Thread-safe: pure functions.
#ifndef HPCAI500_WORKER_FLAGS_H_
#define HPCAI500_WORKER_FLAGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/registry.h"

namespace hpcai500::worker {

// Everything a run needs: the registry config with the flags applied, and the
// rank layout from the environment (torchrun style).
struct WorkerOptions {
  ConfigInfo config;  // epochs, batch_size, data_dir already overridden
  std::string precision = "fp32";  // fp32 | bf16 | fp16
  std::string device = "cpu";      // cpu | cuda
  uint64_t seed = 42;
  int threads = 1;
  std::string events_file;      // empty: stdout only
  int64_t steps_per_epoch = 0;  // 0: the whole shard

  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr;  // set when world_size > 1
  int master_port = 0;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
EnvLookup ProcessEnv();

enum class ParseOutcome { kRun, kHelp, kError };

// Parses `args` (argv without the program name; "--flag value" or
// "--flag=value") and the rank variables RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT. Returns kError with *error
// naming the flag, variable, workload or config at fault (unknown, out of
// range, or a config the worker does not implement).
ParseOutcome ParseWorkerFlags(const std::vector<std::string>& args,
                              const Registry& registry, const EnvLookup& env,
                              unsigned hardware_threads, WorkerOptions* out,
                              std::string* error);

std::string WorkerUsage();

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_FLAGS_H_
