#include "worker/flags.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/fast_paths.h"
#include "common/numbers.h"
#include "common/vocabulary.h"
#include "common/worker_args.h"
#include "worker/models/model_zoo.h"

namespace hpcai500::worker {

namespace {

// ReadInt (common/numbers.h) into an int field.
template <typename T>
bool ReadInt(const std::string& name, const std::string& text, int64_t lo,
             int64_t hi, T* out, std::string* error) {
  int64_t v = 0;
  if (!hpcai500::ReadInt(name, text, lo, hi, &v, error)) return false;
  *out = static_cast<T>(v);
  return true;
}

// The rank variables of one launcher family.
struct RankEnvNames {
  const char* source;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;  // may be null (Slurm: see below)
};

constexpr RankEnvNames kTorchrun = {"torchrun", "RANK", "WORLD_SIZE",
                                    "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
constexpr RankEnvNames kOpenMpi = {
    "openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr RankEnvNames kSlurm = {"slurm", "SLURM_PROCID", "SLURM_NTASKS",
                                 "SLURM_LOCALID", nullptr};

// Expands Slurm's SLURM_TASKS_PER_NODE ("2(x3),1") and returns the count of
// node `node`; false when malformed or too short.
bool SlurmTasksOnNode(const std::string& text, int node, int* tasks) {
  int index = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    std::optional<int64_t> repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string::npos) {
      repeat = item.back() == ')'
                   ? ParseInt(item.substr(paren + 2, item.size() - paren - 3),
                              1, 1 << 20)
                   : std::nullopt;
      if (!repeat) return false;
      item.resize(paren);
    }
    std::optional<int64_t> count = ParseInt(item, 1, 1 << 20);
    if (!count) return false;
    if (node < index + *repeat) {
      *tasks = static_cast<int>(*count);
      return true;
    }
    index += static_cast<int>(*repeat);
  }
  return false;
}

// The first launcher family whose world size or rank variable is set
// (torchrun, OpenMPI, Slurm), or null: rank 0 of 1.
const RankEnvNames* FindRankFamily(const EnvLookup& env) {
  for (const RankEnvNames* f : {&kTorchrun, &kOpenMpi, &kSlurm}) {
    if (env(f->world_size) || env(f->rank)) return f;
  }
  return nullptr;
}

// Reads variable `name` into *value when it is set; false with *error when
// it is set but not an integer in [lo, hi].
bool ReadEnvInt(const EnvLookup& env, const char* name, int64_t lo, int64_t hi,
                int* value, std::string* error) {
  std::optional<std::string> text = env(name);
  if (!text) return true;
  return ReadInt(name, *text, lo, hi, value, error);
}

// The ranks on this node: the family's local world size variable, or for
// Slurm SLURM_NTASKS_PER_NODE, or this node's entry of SLURM_TASKS_PER_NODE.
bool ReadLocalWorldSize(const RankEnvNames& family, const EnvLookup& env,
                        WorkerOptions* o, std::string* error) {
  o->local_world_size = 1;
  if (family.local_world_size != nullptr) {
    return ReadEnvInt(env, family.local_world_size, 1, o->world_size,
                      &o->local_world_size, error);
  }
  if (env("SLURM_NTASKS_PER_NODE")) {
    return ReadEnvInt(env, "SLURM_NTASKS_PER_NODE", 1, o->world_size,
                      &o->local_world_size, error);
  }
  std::optional<std::string> per_node = env("SLURM_TASKS_PER_NODE");
  if (!per_node) return true;
  int node = 0;
  if (!ReadEnvInt(env, "SLURM_NODEID", 0, 1 << 20, &node, error)) return false;
  if (!SlurmTasksOnNode(*per_node, node, &o->local_world_size) ||
      o->local_world_size > o->world_size) {
    *error = "SLURM_TASKS_PER_NODE: '" + *per_node +
             "' does not give a task count for node " + std::to_string(node);
    return false;
  }
  return true;
}

// MASTER_ADDR and MASTER_PORT, which a world of more than one rank needs.
bool ReadRendezvous(const RankEnvNames& family, const EnvLookup& env,
                    WorkerOptions* o, std::string* error) {
  if (!env(family.rank)) {
    *error = std::string(family.world_size) + " is " +
             std::to_string(o->world_size) + " but " + family.rank +
             " is not set";
    return false;
  }
  std::optional<std::string> addr = env("MASTER_ADDR");
  std::optional<std::string> port = env("MASTER_PORT");
  if (!addr || addr->empty() || !port) {
    *error = "a world of " + std::to_string(o->world_size) + " ranks (from " +
             family.source +
             " variables) needs MASTER_ADDR and MASTER_PORT, the address "
             "and port of rank 0's rendezvous store";
    return false;
  }
  o->master_addr = *addr;
  return ReadInt("MASTER_PORT", *port, 1, 65535, &o->master_port, error);
}

// The rank layout from the environment (see ParseWorkerFlags).
bool ReadRankLayout(const EnvLookup& env, WorkerOptions* o,
                    std::string* error) {
  const RankEnvNames* family = FindRankFamily(env);
  o->rank_source = family == nullptr ? "none" : family->source;
  if (family == nullptr) return true;
  if (!ReadEnvInt(env, family->world_size, 1, 1 << 20, &o->world_size, error) ||
      !ReadEnvInt(env, family->rank, 0, o->world_size - 1, &o->rank, error) ||
      !ReadLocalWorldSize(*family, env, o, error) ||
      !ReadEnvInt(env, family->local_rank, 0, o->local_world_size - 1,
                  &o->local_rank, error)) {
    return false;
  }
  return o->world_size == 1 || ReadRendezvous(*family, env, o, error);
}

// The registry config args name, with the flags that override it applied
// (epochs, model, data, batch size). Needs args.precision set.
bool ResolveConfig(const WorkerArgs& args, const Registry& registry,
                   ConfigInfo* out, std::string* error) {
  if (registry.FindWorkload(args.workload) == nullptr) {
    *error = "unknown workload '" + args.workload + "'";
    return false;
  }
  const ConfigInfo* config = registry.FindConfig(args.workload, args.config);
  if (config == nullptr) {
    *error =
        "unknown config '" + args.config + "' of workload " + args.workload;
    return false;
  }
  if (!config->implemented) {
    *error = "config " + args.workload + "/" + args.config +
             " is listed but not implemented by this worker yet";
    return false;
  }
  if (args.model && FindModel(*args.model) == nullptr) {
    *error =
        "--model: '" + *args.model + "' is not " + JoinInProse(ModelNames());
    return false;
  }
  *out = *config;
  if (args.epochs) out->epochs = static_cast<int>(*args.epochs);
  if (args.model) out->model = *args.model;
  if (args.data) {
    out->data_dir = *args.data;
    if (*args.data == "synthetic") out->real_data = false;
  }
  out->batch_size = args.batch_size
                        ? static_cast<int>(*args.batch_size)
                        : DefaultBatchSize(*config, *args.precision);
  return true;
}

// The fast paths a run asked for (common/fast_paths.h) fit its model; the
// device is --device cuda already (WorkerArgs::FromArgv).
bool CheckFastPaths(const WorkerArgs& args, const ConfigInfo& config,
                    std::string* error) {
  if (!args.fused_bn.value_or(false)) return true;
  const ModelSpec* model = FindModel(config.model);
  if (model == nullptr || model->family != ModelFamily::kResNet) {
    *error = "--fused-bn: model " + config.model +
             " has no fused batch-norm path; the ResNets have: " +
             JoinInProse(ModelNames(ModelFamily::kResNet));
    return false;
  }
  return true;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

void FillWorkerDefaults(unsigned hardware_threads, int local_ranks,
                        WorkerArgs* args) {
  args->FillDefaults();
  if (!args->dist_backend) {
    args->dist_backend = *args->device == Device::kCuda ? DistBackend::kNccl
                                                        : DistBackend::kGloo;
  }
  if (!args->threads) {
    args->threads = std::max(
        1, static_cast<int>(hardware_threads) / std::max(1, local_ranks));
  }
}

WorkerArgs DefaultWorkerArgs() {
  WorkerArgs args;
  FillWorkerDefaults(/*hardware_threads=*/1, /*local_ranks=*/1, &args);
  return args;
}

std::string WorkerUsage() {
  return WorkerArgs::Usage("hpcai500-worker") +
         "Trains one rank of a registry config and prints its event lines.\n"
         "Models (--model): " +
         JoinInProse(ModelNames()) +
         ".\n"
         "Rank layout from torchrun's RANK, WORLD_SIZE, LOCAL_RANK,\n"
         "LOCAL_WORLD_SIZE; or OpenMPI's "
         "OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,\n"
         "LOCAL_SIZE}; or Slurm's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,\n"
         "SLURM_NTASKS_PER_NODE | SLURM_TASKS_PER_NODE (none set: rank 0 of\n"
         "1). More than one rank also needs MASTER_ADDR and MASTER_PORT.\n"
         "Exit: 0 success, 1 aborted run, 2 bad command line.\n";
}

ParseOutcome ParseWorkerFlags(const std::vector<std::string>& argv,
                              const Registry& registry, const EnvLookup& env,
                              unsigned hardware_threads, WorkerOptions* out,
                              std::string* error) {
  WorkerOptions o;
  switch (WorkerArgs::FromArgv(argv, &o.args, error)) {
    case ArgvOutcome::kHelp:
      return ParseOutcome::kHelp;
    case ArgvOutcome::kError:
      return ParseOutcome::kError;
    case ArgvOutcome::kArgs:
      break;
  }
  if (!ReadRankLayout(env, &o, error)) return ParseOutcome::kError;
  FillWorkerDefaults(hardware_threads, o.local_world_size, &o.args);
  if (!ResolveConfig(o.args, registry, &o.config, error) ||
      !CheckFastPaths(o.args, o.config, error)) {
    return ParseOutcome::kError;
  }
  *out = std::move(o);
  return ParseOutcome::kRun;
}

bool TakeFlagAndValue(int argc, char** argv, int* i, std::string* flag,
                      std::string* value) {
  *flag = argv[*i];
  const size_t eq = flag->find('=');
  if (eq != std::string::npos) {
    *value = flag->substr(eq + 1);
    flag->resize(eq);
    return true;
  }
  if (*i + 1 >= argc) return false;
  *value = argv[++*i];
  return true;
}

}  // namespace hpcai500::worker
