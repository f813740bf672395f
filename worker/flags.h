// The worker's command line (common/worker_args.h) and rank environment,
// resolved against the workload registry into one WorkerOptions. No LibTorch
// here.
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
#include "common/vocabulary.h"

namespace hpcai500::worker {

// Everything a run needs: the registry config with the flags applied, and the
// rank layout from the environment (torchrun style).
struct WorkerOptions {
  ConfigInfo config;  // epochs, batch_size, data_dir already overridden
  Precision precision = Precision::kFp32;
  Device device = Device::kCpu;
  uint64_t seed = 42;
  int threads = 1;
  std::string events_file;      // empty: stdout only
  int64_t steps_per_epoch = 0;  // 0: the whole shard

  // How ranks exchange gradients, and what keeps a run alive and resumable.
  Compression compression = Compression::kNone;
  // --dist-backend: the c10d backend of a world of more than one rank;
  // without the flag NCCL for --device cuda, Gloo for cpu. Gloo with
  // --device cuda all-reduces CUDA tensors (ranks may share one GPU).
  DistBackend dist_backend = DistBackend::kGloo;
  int powersgd_rank = 1;  // --powersgd-rank, >= 1
  // --powersgd-warmup-steps: steps all-reduced uncompressed before PowerSGD
  // starts (PyTorch's start_powerSGD_iter), counted from each (re)start.
  int powersgd_warmup_steps = 100;
  double bucket_mb = 25;                 // --bucket-mb, gradient bucket size
  bool deterministic = false;            // --deterministic
  std::string checkpoint_dir;            // --checkpoint-dir; empty: none
  bool resume = false;                   // --resume (needs --checkpoint-dir)
  int watchdog_seconds = 300;            // --watchdog-seconds; 0 disables
  int collective_timeout_seconds = 180;  // --collective-timeout-seconds

  // Model, data and MLPerf submission: --model overrides config.model;
  // --data synthetic sets config.real_data = false (random tensors shaped
  // like config.dataset's samples: the run is unranked).
  // --mllog-submission org=ORG,platform=PLATFORM[,status=S] adds MLPerf's
  // submission keys so the log passes MLCommons' compliance checker.
  bool mllog_submission = false;
  std::string mllog_org;
  std::string mllog_platform;
  std::string mllog_status = "onprem";  // onprem | cloud | preview | research

  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string rank_source;  // "torchrun", "openmpi", "slurm" or "none"
  std::string master_addr;  // set when world_size > 1
  int master_port = 0;
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
EnvLookup ProcessEnv();

enum class ParseOutcome { kRun, kHelp, kError };

// Parses `args` (argv without the program name, read by
// WorkerArgs::FromArgv: "--flag value" or "--flag=value"; --deterministic
// and --resume also stand alone) and the
// rank layout from the first environment family present: torchrun (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), OpenMPI (OMPI_COMM_WORLD_RANK,
// _SIZE, _LOCAL_RANK, _LOCAL_SIZE) or Slurm (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE with
// SLURM_NODEID). World > 1 also needs MASTER_ADDR and MASTER_PORT. Threads
// default to hardware_threads / local ranks. Returns kError with *error
// naming the flag, variable, workload or config at fault (unknown, out of
// range, or a config the worker does not implement). Without --batch-size
// the per-rank batch is DefaultBatchSize (common/vocabulary.h): an imagenet
// config doubles it in bf16/fp16 (the reference recipe: 128 in fp32, 256 in
// mixed precision).
ParseOutcome ParseWorkerFlags(const std::vector<std::string>& args,
                              const Registry& registry, const EnvLookup& env,
                              unsigned hardware_threads, WorkerOptions* out,
                              std::string* error);

std::string WorkerUsage();

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_FLAGS_H_
