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

#include "common/vocabulary.h"
#include "common/worker_args.h"
#include "methodology/registry.h"

namespace hpcai500::worker {

// Fills the flags `args` leaves unset with their defaults: the table's
// (WorkerArgs::FillDefaults), then the two that follow the run: the
// collective backend (NCCL for --device cuda, Gloo for cpu) and the threads
// (the node's `hardware_threads` shared among its `local_ranks`, at least 1).
void FillWorkerDefaults(unsigned hardware_threads, int local_ranks,
                        WorkerArgs* args);

// The args of a worker given no flag on a node of one thread: what
// WorkerOptions starts from (and tests that build options by hand).
WorkerArgs DefaultWorkerArgs();

// Everything a run needs: the command line with its defaults applied, the
// registry config with the flags applied, and the rank layout from the
// environment (torchrun style).
struct WorkerOptions {
  // Every flag that has a default is set (FillWorkerDefaults), so the worker
  // reads those with `*args.seed`; events_file, steps_per_epoch,
  // checkpoint_dir and mllog_submission are set only when given. epochs,
  // batch_size, model and data are applied to `config`: read them there.
  WorkerArgs args = DefaultWorkerArgs();
  ConfigInfo config;  // epochs, batch_size, model, data_dir already overridden

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

// The flag at argv[*i] of a subcommand (make-ewa, preflight) and its value,
// as `--flag=value` or `--flag value`: *flag and *value set and *i moved
// past what they took. False when the flag is the last word and has no
// value (the caller says "needs a value").
bool TakeFlagAndValue(int argc, char** argv, int* i, std::string* flag,
                      std::string* value);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_FLAGS_H_
