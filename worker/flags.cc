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

const char* const kFlags[] = {
    "workload", "config",  "epochs", "batch-size",  "precision",      "device",
    "seed",     "threads", "data",   "events-file", "steps-per-epoch"};

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
         "Trains one rank of a registry config and prints its event lines.\n"
         "Rank layout from RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
         "MASTER_ADDR, MASTER_PORT (none set: rank 0 of 1).\n"
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
  }
  if (flags.count("events-file")) {
    if (flags["events-file"].empty()) {
      *error = "--events-file: empty path";
      return ParseOutcome::kError;
    }
    o.events_file = flags["events-file"];
  }

  // The rank layout: all of it from the environment, or rank 0 of 1.
  auto read_env = [&](const char* name, int64_t lo, int64_t hi,
                      int* value) -> bool {
    std::optional<std::string> text = env(name);
    if (!text) return true;
    return ReadInt(name, *text, lo, hi, value, error);
  };
  if (!read_env("WORLD_SIZE", 1, 1 << 20, &o.world_size) ||
      !read_env("RANK", 0, o.world_size - 1, &o.rank) ||
      !read_env("LOCAL_WORLD_SIZE", 1, o.world_size, &o.local_world_size) ||
      !read_env("LOCAL_RANK", 0, o.local_world_size - 1, &o.local_rank)) {
    return ParseOutcome::kError;
  }
  if (o.world_size > 1) {
    if (!env("RANK")) {
      *error = "WORLD_SIZE is " + std::to_string(o.world_size) +
               " but RANK is not set";
      return ParseOutcome::kError;
    }
    std::optional<std::string> addr = env("MASTER_ADDR");
    std::optional<std::string> port = env("MASTER_PORT");
    if (!addr || addr->empty() || !port) {
      *error = "WORLD_SIZE > 1 needs MASTER_ADDR and MASTER_PORT";
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
