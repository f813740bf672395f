#include "worker/flags.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>

namespace hpcai500::worker {

namespace {

bool ParseInt64(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size() || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

// Reads an integer flag or variable into *out; sets *error naming it.
template <typename T>
bool ReadInt(const std::string& name, const std::string& text, int64_t lo,
             int64_t hi, T* out, std::string* error) {
  int64_t v = 0;
  if (!ParseInt64(text, lo, hi, &v)) {
    *error = name + ": '" + text + "' is not an integer in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return false;
  }
  *out = static_cast<T>(v);
  return true;
}

const char* const kFlags[] = {"workload",
                              "config",
                              "epochs",
                              "batch-size",
                              "precision",
                              "device",
                              "seed",
                              "threads",
                              "data",
                              "events-file",
                              "steps-per-epoch",
                              "compression",
                              "powersgd-rank",
                              "powersgd-warmup-steps",
                              "bucket-mb",
                              "deterministic",
                              "checkpoint-dir",
                              "resume",
                              "watchdog-seconds",
                              "collective-timeout-seconds",
                              "model",
                              "mllog-submission"};

// Flags that may stand alone ("--resume") meaning true.
bool IsBoolFlag(const std::string& name) {
  return name == "deterministic" || name == "resume";
}

bool ReadBool(const std::string& name, const std::string& text, bool* out,
              std::string* error) {
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    *error = name + ": '" + text + "' is not true or false";
    return false;
  }
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
    int64_t count = 0;
    int64_t repeat = 1;
    size_t paren = item.find("(x");
    if (paren != std::string::npos) {
      if (item.back() != ')' ||
          !ParseInt64(item.substr(paren + 2, item.size() - paren - 3), 1,
                      1 << 20, &repeat)) {
        return false;
      }
      item.resize(paren);
    }
    if (!ParseInt64(item, 1, 1 << 20, &count)) return false;
    if (node < index + repeat) {
      *tasks = static_cast<int>(count);
      return true;
    }
    index += static_cast<int>(repeat);
  }
  return false;
}

// The models the worker builds (worker/models.h, worker/resnet.h).
bool IsKnownModel(const std::string& model) {
  for (const char* known :
       {"resnet_small", "resnet18", "resnet34", "resnet50", "resnet101",
        "faster_rcnn_resnet18", "faster_rcnn_resnet34", "faster_rcnn_resnet50",
        "faster_rcnn_resnet101"}) {
    if (model == known) return true;
  }
  return false;
}

// Parses "org=ORG,platform=PLATFORM[,status=STATUS]" into `o`.
bool ReadMllogSubmission(const std::string& text, WorkerOptions* o,
                         std::string* error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value =
        eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || value.empty()) {
      *error = "--mllog-submission: '" + item + "' is not key=value";
      return false;
    }
    if (key == "org") {
      o->mllog_org = value;
    } else if (key == "platform") {
      o->mllog_platform = value;
    } else if (key == "status") {
      if (value != "onprem" && value != "cloud" && value != "preview" &&
          value != "research") {
        *error = "--mllog-submission: status '" + value +
                 "' is not onprem, cloud, preview or research";
        return false;
      }
      o->mllog_status = value;
    } else {
      *error = "--mllog-submission: unknown key '" + key +
               "' (org, platform, status)";
      return false;
    }
  }
  if (o->mllog_org.empty() || o->mllog_platform.empty()) {
    *error = "--mllog-submission needs org=... and platform=...";
    return false;
  }
  o->mllog_submission = true;
  return true;
}

bool IsKnownFlag(const std::string& name) {
  for (const char* flag : kFlags) {
    if (name == flag) return true;
  }
  return false;
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string WorkerUsage() {
  return "usage: hpcai500-worker --workload W --config C [--epochs N]\n"
         "         [--batch-size N] [--precision fp32|bf16|fp16]\n"
         "         [--device cpu|cuda] [--seed N] [--threads N] [--data DIR]\n"
         "         [--events-file PATH] [--steps-per-epoch N]\n"
         "         [--compression none|fp16|bf16|powersgd] [--powersgd-rank "
         "N]\n"
         "         [--powersgd-warmup-steps N (uncompressed first, default "
         "100)]\n"
         "         [--bucket-mb MB] [--deterministic] [--checkpoint-dir DIR]\n"
         "         [--resume] [--watchdog-seconds N (0: off, default 300)]\n"
         "         [--collective-timeout-seconds N (default 180)]\n"
         "         [--model resnet_small|resnet18|resnet34|resnet50|resnet101\n"
         "                  (extreme_weather: "
         "faster_rcnn_resnet18|34|50|101)]\n"
         "         [--data DIR|synthetic]\n"
         "         [--mllog-submission org=ORG,platform=PLATFORM[,status=S]]\n"
         "Trains one rank of a registry config and prints its event lines.\n"
         "Rank layout from torchrun's RANK, WORLD_SIZE, LOCAL_RANK,\n"
         "LOCAL_WORLD_SIZE; or OpenMPI's "
         "OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,\n"
         "LOCAL_SIZE}; or Slurm's SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,\n"
         "SLURM_NTASKS_PER_NODE | SLURM_TASKS_PER_NODE (none set: rank 0 of\n"
         "1). More than one rank also needs MASTER_ADDR and MASTER_PORT.\n"
         "Threads default to the node's cores divided among its local ranks.\n"
         "Exit: 0 success, 1 aborted run, 2 bad command line.\n";
}

ParseOutcome ParseWorkerFlags(const std::vector<std::string>& args,
                              const Registry& registry, const EnvLookup& env,
                              unsigned hardware_threads, WorkerOptions* out,
                              std::string* error) {
  std::map<std::string, std::string> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") return ParseOutcome::kHelp;
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "'";
      return ParseOutcome::kError;
    }
    std::string name = arg.substr(2);
    std::string value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (IsBoolFlag(name)) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = "flag --" + name + " needs a value";
      return ParseOutcome::kError;
    }
    if (!IsKnownFlag(name)) {
      *error = "unknown flag --" + name;
      return ParseOutcome::kError;
    }
    flags[name] = value;
  }

  if (!flags.count("workload") || !flags.count("config")) {
    *error = "--workload and --config are required";
    return ParseOutcome::kError;
  }
  const std::string& workload = flags["workload"];
  const std::string& config_name = flags["config"];
  if (registry.FindWorkload(workload) == nullptr) {
    *error = "unknown workload '" + workload + "'";
    return ParseOutcome::kError;
  }
  const ConfigInfo* config = registry.FindConfig(workload, config_name);
  if (config == nullptr) {
    *error = "unknown config '" + config_name + "' of workload " + workload;
    return ParseOutcome::kError;
  }
  if (!config->implemented) {
    *error = "config " + workload + "/" + config_name +
             " is listed but not implemented by this worker yet";
    return ParseOutcome::kError;
  }
  WorkerOptions o;
  o.config = *config;

  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (flags.count("epochs") && !ReadInt("--epochs", flags["epochs"], 1, 100000,
                                        &o.config.epochs, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("batch-size") &&
      !ReadInt("--batch-size", flags["batch-size"], 1, 1 << 20,
               &o.config.batch_size, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("seed") &&
      !ReadInt("--seed", flags["seed"], 0, std::numeric_limits<int64_t>::max(),
               &o.seed, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("steps-per-epoch") &&
      !ReadInt("--steps-per-epoch", flags["steps-per-epoch"], 1, kIntMax,
               &o.steps_per_epoch, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("precision")) {
    o.precision = flags["precision"];
    if (o.precision != "fp32" && o.precision != "bf16" &&
        o.precision != "fp16") {
      *error = "--precision: '" + o.precision + "' is not fp32, bf16 or fp16";
      return ParseOutcome::kError;
    }
  }
  if (flags.count("device")) {
    o.device = flags["device"];
    if (o.device != "cpu" && o.device != "cuda") {
      *error = "--device: '" + o.device + "' is not cpu or cuda";
      return ParseOutcome::kError;
    }
  }
  if (flags.count("data")) {
    if (flags["data"].empty()) {
      *error = "--data: empty path";
      return ParseOutcome::kError;
    }
    o.config.data_dir = flags["data"];
    if (flags["data"] == "synthetic") o.config.real_data = false;
  }
  if (flags.count("model")) {
    if (!IsKnownModel(flags["model"])) {
      *error = "--model: '" + flags["model"] +
               "' is not resnet_small, resnet18, resnet34, resnet50 or "
               "resnet101";
      return ParseOutcome::kError;
    }
    o.config.model = flags["model"];
  }
  if (!flags.count("batch-size") && o.precision != "fp32" &&
      o.config.dataset == "imagenet") {
    o.config.batch_size *= 2;
  }
  if (flags.count("mllog-submission") &&
      !ReadMllogSubmission(flags["mllog-submission"], &o, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("events-file")) {
    if (flags["events-file"].empty()) {
      *error = "--events-file: empty path";
      return ParseOutcome::kError;
    }
    o.events_file = flags["events-file"];
  }

  if (flags.count("compression")) {
    o.compression = flags["compression"];
    if (o.compression != "none" && o.compression != "fp16" &&
        o.compression != "bf16" && o.compression != "powersgd") {
      *error = "--compression: '" + o.compression +
               "' is not none, fp16, bf16 or powersgd";
      return ParseOutcome::kError;
    }
  }
  if (flags.count("powersgd-rank") &&
      !ReadInt("--powersgd-rank", flags["powersgd-rank"], 1, 1024,
               &o.powersgd_rank, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("powersgd-warmup-steps") &&
      !ReadInt("--powersgd-warmup-steps", flags["powersgd-warmup-steps"], 0,
               1000000, &o.powersgd_warmup_steps, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("bucket-mb")) {
    const std::string& text = flags["bucket-mb"];
    char* end = nullptr;
    errno = 0;
    double mb = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (text.empty() || errno != 0 || end != text.c_str() + text.size() ||
        !(mb > 0) || mb > 65536) {
      *error = "--bucket-mb: '" + text + "' is not a number in (0, 65536]";
      return ParseOutcome::kError;
    }
    o.bucket_mb = mb;
  }
  if (flags.count("deterministic") &&
      !ReadBool("--deterministic", flags["deterministic"], &o.deterministic,
                error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("resume") &&
      !ReadBool("--resume", flags["resume"], &o.resume, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("checkpoint-dir")) {
    if (flags["checkpoint-dir"].empty()) {
      *error = "--checkpoint-dir: empty path";
      return ParseOutcome::kError;
    }
    o.checkpoint_dir = flags["checkpoint-dir"];
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    *error = "--resume needs --checkpoint-dir";
    return ParseOutcome::kError;
  }
  if (flags.count("watchdog-seconds") &&
      !ReadInt("--watchdog-seconds", flags["watchdog-seconds"], 0, 7 * 86400,
               &o.watchdog_seconds, error)) {
    return ParseOutcome::kError;
  }
  if (flags.count("collective-timeout-seconds") &&
      !ReadInt("--collective-timeout-seconds",
               flags["collective-timeout-seconds"], 1, 7 * 86400,
               &o.collective_timeout_seconds, error)) {
    return ParseOutcome::kError;
  }

  // The rank layout: from the first launcher family whose world size or rank
  // variable is set (torchrun, OpenMPI, Slurm), or rank 0 of 1.
  const RankEnvNames* family = nullptr;
  for (const RankEnvNames* f : {&kTorchrun, &kOpenMpi, &kSlurm}) {
    if (env(f->world_size) || env(f->rank)) {
      family = f;
      break;
    }
  }
  o.rank_source = family == nullptr ? "none" : family->source;
  if (family != nullptr) {
    auto read_env = [&](const char* name, int64_t lo, int64_t hi,
                        int* value) -> bool {
      std::optional<std::string> text = env(name);
      if (!text) return true;
      return ReadInt(name, *text, lo, hi, value, error);
    };
    o.local_world_size = 1;
    if (!read_env(family->world_size, 1, 1 << 20, &o.world_size) ||
        !read_env(family->rank, 0, o.world_size - 1, &o.rank)) {
      return ParseOutcome::kError;
    }
    if (family->local_world_size != nullptr) {
      if (!read_env(family->local_world_size, 1, o.world_size,
                    &o.local_world_size)) {
        return ParseOutcome::kError;
      }
    } else if (env("SLURM_NTASKS_PER_NODE")) {
      if (!read_env("SLURM_NTASKS_PER_NODE", 1, o.world_size,
                    &o.local_world_size)) {
        return ParseOutcome::kError;
      }
    } else if (std::optional<std::string> per_node =
                   env("SLURM_TASKS_PER_NODE")) {
      int node = 0;
      if (!read_env("SLURM_NODEID", 0, 1 << 20, &node)) {
        return ParseOutcome::kError;
      }
      if (!SlurmTasksOnNode(*per_node, node, &o.local_world_size) ||
          o.local_world_size > o.world_size) {
        *error = "SLURM_TASKS_PER_NODE: '" + *per_node +
                 "' does not give a task count for node " +
                 std::to_string(node);
        return ParseOutcome::kError;
      }
    }
    if (!read_env(family->local_rank, 0, o.local_world_size - 1,
                  &o.local_rank)) {
      return ParseOutcome::kError;
    }
  }
  if (o.world_size > 1) {
    if (!env(family->rank)) {
      *error = std::string(family->world_size) + " is " +
               std::to_string(o.world_size) + " but " + family->rank +
               " is not set";
      return ParseOutcome::kError;
    }
    std::optional<std::string> addr = env("MASTER_ADDR");
    std::optional<std::string> port = env("MASTER_PORT");
    if (!addr || addr->empty() || !port) {
      *error = "a world of " + std::to_string(o.world_size) + " ranks (from " +
               family->source +
               " variables) needs MASTER_ADDR and MASTER_PORT, the address "
               "and port of rank 0's rendezvous store";
      return ParseOutcome::kError;
    }
    o.master_addr = *addr;
    if (!ReadInt("MASTER_PORT", *port, 1, 65535, &o.master_port, error)) {
      return ParseOutcome::kError;
    }
  }

  o.threads = std::max(
      1, static_cast<int>(hardware_threads) / std::max(1, o.local_world_size));
  if (flags.count("threads") &&
      !ReadInt("--threads", flags["threads"], 1, 4096, &o.threads, error)) {
    return ParseOutcome::kError;
  }
  *out = std::move(o);
  return ParseOutcome::kRun;
}

}  // namespace hpcai500::worker
