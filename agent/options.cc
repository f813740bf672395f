// hpcai500-agent's flags parsed and checked, and the node's defaults behind
// them (its GPUs, CPUs, inventory, worker and addresses).
#include "agent/options.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/launch/assignment.h"
#include "agent/launch/worker_env.h"
#include "agent/node/inventory.h"
#include "agent/node/worker_version.h"
#include "agent/system/process.h"
#include "common/checkpoint_manifest.h"
#include "common/flags.h"
#include "common/printable.h"
#include "common/status_macros.h"
#include "common/token.h"
#include "methodology/registry.h"
#include "methodology/spec.h"

namespace hpcai500::agent {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", reason));
}

bool IsLabelText(absl::string_view s) {
  return !s.empty() && s.size() <= 128 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return c > ' ' && c < 127 && c != ',' && c != '=';
         });
}

// path made absolute and normal, without a trailing '/'.
absl::StatusOr<std::string> AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::string out =
      std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return absl::InvalidArgumentError(ec.message());
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// The datasets a node may locate: those of configs that read node data.
std::set<std::string> LocatableDatasets() {
  std::set<std::string> datasets;
  for (const ConfigInfo& config : Registry::Builtin().configs()) {
    if (ReadsNodeData(config)) datasets.insert(config.dataset);
  }
  return datasets;
}

// Adds one --data DATASET=DIR to *data_dirs.
absl::Status AddDataDir(absl::string_view arg,
                        std::map<std::string, std::string>* data_dirs) {
  std::vector<std::string> kv = absl::StrSplit(arg, absl::MaxSplits('=', 1));
  if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
    return Bad("--data", absl::StrCat("expected DATASET=DIR, got '", arg, "'"));
  }
  const std::string& dataset = kv[0];
  std::set<std::string> known = LocatableDatasets();
  if (known.count(dataset) == 0) {
    return Bad("--data", absl::StrCat("no registry config reads dataset '",
                                      dataset, "' from a directory (known: ",
                                      absl::StrJoin(known, ", "), ")"));
  }
  if (data_dirs->count(dataset) > 0) {
    return Bad("--data", absl::StrCat("dataset '", dataset, "' given twice"));
  }
  absl::StatusOr<std::string> dir = AbsolutePath(kv[1]);
  if (!dir.ok()) return Bad("--data", dir.status().message());
  std::error_code ec;
  if (!std::filesystem::is_directory(*dir, ec)) {
    return Bad("--data", absl::StrCat(dataset, ": ", *dir,
                                      " is not an existing directory"));
  }
  (*data_dirs)[dataset] = *std::move(dir);
  return absl::OkStatus();
}

// `program` as execve needs it: a name without '/' found on the agent's
// PATH (as a shell would), else as given (the launch then fails naming it).
std::string ResolveProgram(const std::string& program) {
  if (program.empty() || program.find('/') != std::string::npos) {
    return program;
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path == nullptr ? "" : path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program;
}

// The command line before its values are checked.
struct AgentFlags {
  AgentOptions options;  // the flags that are taken as given
  std::string slots, workdir, labels, kill_grace, checkpoint_root;
  std::string nvml_library, address;
  std::vector<std::string> data;
  TokenFlags token;
  TlsFileFlags tls;
};

// The agent's flags, bound into *flags (borrowed for the life of the App).
std::unique_ptr<CLI::App> NewAgentFlagApp(AgentFlags& flags) {
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500-agent");
  AddValueFlag(*app, "coordinator", &flags.options.coordinator);
  AddValueFlag(*app, "name", &flags.options.name);
  AddValueFlag(*app, "slots", &flags.slots);
  AddValueFlag(*app, "workdir", &flags.workdir);
  AddValueFlag(*app, "address", &flags.address);
  AddValueFlag(*app, "iface", &flags.options.iface);
  AddRepeatedFlag(*app, "env", &flags.options.worker_env_names);
  AddValueFlag(*app, "worker", &flags.options.worker_path);
  AddValueFlag(*app, "labels", &flags.labels);
  AddValueFlag(*app, "kill-grace-seconds", &flags.kill_grace);
  AddRepeatedFlag(*app, "data", &flags.data);
  AddValueFlag(*app, "checkpoint-root", &flags.checkpoint_root);
  AddSwitch(*app, "shared-checkpoints", &flags.options.shared_checkpoints);
  AddSwitch(*app, "leave-on-stop", &flags.options.leave_on_stop);
  AddValueFlag(*app, "nvml-library", &flags.nvml_library);
  AddValueFlag(*app, "mpirun", &flags.options.mpirun);
  AddValueFlag(*app, "mpirun-rsh-agent", &flags.options.mpirun_rsh_agent);
  AddValueFlag(*app, "srun", &flags.options.srun);
  AddTokenFlags(*app, &flags.token);
  AddClientTlsFlags(*app, &flags.tls, /*with_client_certificate=*/true);
  return app;
}

// --coordinator and --name: present and well-formed.
absl::Status CheckIdentity(const AgentOptions& options) {
  if (options.coordinator.empty()) return Bad("--coordinator", "is required");
  if (options.coordinator.find(':') == std::string::npos) {
    return Bad("--coordinator", "must be HOST:PORT");
  }
  if (!IsNodeName(options.name)) {
    return Bad("--name",
               absl::StrCat("is required and must be ", kNodeNameRule));
  }
  return absl::OkStatus();
}

// --slots (default: GPUs or 1) and --kill-grace-seconds.
absl::Status ApplyCounts(const AgentFlags& flags, AgentOptions& options) {
  if (flags.slots.empty()) {
    options.slots = std::max(1, options.gpus);
  } else if (!absl::SimpleAtoi(flags.slots, &options.slots) ||
             options.slots < 1 || options.slots > 4096) {
    return Bad("--slots", absl::StrCat("must be between 1 and 4096, got '",
                                       flags.slots, "'"));
  }
  if (!flags.kill_grace.empty()) {
    int seconds = 0;
    if (!absl::SimpleAtoi(flags.kill_grace, &seconds) || seconds < 0 ||
        seconds > 3600) {
      return Bad("--kill-grace-seconds", "must be between 0 and 3600");
    }
    options.kill_grace_ms = int64_t{seconds} * 1000;
  }
  return absl::OkStatus();
}

// --workdir (default ./hpcai500-agent-NAME), --worker and --checkpoint-root
// (default WORKDIR/checkpoints), made absolute.
absl::Status ApplyPaths(const AgentFlags& flags, AgentOptions& options) {
  std::string workdir = flags.workdir.empty()
                            ? absl::StrCat("./hpcai500-agent-", options.name)
                            : flags.workdir;
  absl::StatusOr<std::string> absolute_workdir = AbsolutePath(workdir);
  if (!absolute_workdir.ok()) {
    return Bad("--workdir", absolute_workdir.status().message());
  }
  options.workdir = *std::move(absolute_workdir);
  if (options.worker_path.empty()) options.worker_path = DefaultWorkerPath();
  for (std::string* program :
       {&options.mpirun, &options.mpirun_rsh_agent, &options.srun}) {
    *program = ResolveProgram(*program);
  }
  std::error_code ec;
  options.worker_path = std::filesystem::absolute(options.worker_path, ec)
                            .lexically_normal()
                            .string();
  if (flags.checkpoint_root.empty()) {
    if (options.shared_checkpoints) {
      return Bad("--shared-checkpoints",
                 "needs --checkpoint-root (the default, inside the workdir, "
                 "is this node's own)");
    }
    options.checkpoint_root = options.workdir + "/checkpoints";
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> root = AbsolutePath(flags.checkpoint_root);
  if (!root.ok()) return Bad("--checkpoint-root", root.status().message());
  options.checkpoint_root = *std::move(root);
  return absl::OkStatus();
}

// --labels k=v,k=v into *labels.
absl::Status ApplyLabels(absl::string_view text,
                         std::map<std::string, std::string>& labels) {
  for (absl::string_view pair : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || !IsLabelText(kv[0]) || !IsLabelText(kv[1])) {
      return Bad("--labels",
                 absl::StrCat("expected k=v,k=v, got '", pair, "'"));
    }
    if (kv[0] == kNodeLabel) {
      return Bad("--labels", absl::StrCat("'", kNodeLabel,
                                          "' is every node's own name, set by "
                                          "the coordinator (use --name)"));
    }
    labels[kv[0]] = kv[1];
  }
  return absl::OkStatus();
}

// The first IPv4 address of interface `iface`. NotFound when it has none.
absl::StatusOr<std::string> InterfaceIpv4Address(const std::string& iface) {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) {
    return absl::InternalError("cannot list the network interfaces");
  }
  std::string found;
  for (ifaddrs* a = all; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET ||
        iface != a->ifa_name) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {0};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) {
      found = text;
    }
  }
  ::freeifaddrs(all);
  if (found.empty()) {
    return absl::NotFoundError(
        absl::StrCat("interface ", iface, " has no IPv4 address"));
  }
  return found;
}

// --iface (an interface of this node) and --address (default: the
// interface's IPv4 address, else 127.0.0.1).
absl::Status ApplyNetwork(const std::string& address, AgentOptions& options) {
  if (!options.iface.empty()) {
    if (options.iface.size() >= IF_NAMESIZE ||
        ::if_nametoindex(options.iface.c_str()) == 0) {
      return Bad("--iface", absl::StrCat("no network interface '",
                                         options.iface, "' on this node"));
    }
  }
  if (!address.empty()) {
    options.address = address;
  } else if (!options.iface.empty()) {
    absl::StatusOr<std::string> found = InterfaceIpv4Address(options.iface);
    if (!found.ok()) {
      return Bad("--iface",
                 absl::StrCat(found.status().message(), "; give --address"));
    }
    options.address = *std::move(found);
  }
  return absl::OkStatus();
}

// Every --env names a variable.
absl::Status CheckEnvNames(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (!IsEnvName(name)) {
      return Bad("--env",
                 absl::StrCat("must name a variable ([A-Za-z_][A-Za-z0-9_]*), "
                              "got '",
                              name, "'"));
    }
  }
  return absl::OkStatus();
}

// The inventory (with the NVML library --nvml-library names, if given) and
// the GPU count: NVML's where it loads, else /dev/nvidia<N>.
void ReadNodeInventory(const std::string& nvml_flag, AgentOptions& options) {
  if (!nvml_flag.empty()) options.nvml_library = nvml_flag;
  InventorySources sources;
  sources.nvml_library = options.nvml_library;
  const NvmlGpus nvml = ReadNvmlGpus(sources.nvml_library);
  options.gpus =
      nvml.loaded ? static_cast<int>(nvml.devices.size()) : CountGpus();
  options.nvml_missing = nvml.loaded ? "" : nvml.why;
  options.inventory = ReadInventory(sources, nvml);
}

// The worker's revision and LibTorch build into the inventory, or why not,
// and the digest of its binary (the first 16 hex digits of its SHA-256:
// a rebuilt worker of the same revision shows in the runs' fingerprints).
void ReadWorkerVersions(AgentOptions& options) {
  PosixProcessLauncher launcher;
  absl::StatusOr<std::map<std::string, std::string>> lines =
      AskWorkerVersion(options.worker_path, kWorkerVersionTimeout, launcher);
  if (!lines.ok()) {
    options.worker_version_missing = std::string(lines.status().message());
    return;
  }
  AddWorkerVersions(*lines, &options.inventory);
  std::string digest, error;
  if (Sha256OfFile(options.worker_path, &digest, &error)) {
    (*options.inventory.mutable_versions())["worker_digest"] =
        digest.substr(0, 16);
  }
}

}  // namespace

int CountGpus() {
  int count = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++count;
    }
  }
  return count;
}

int CountCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::string DefaultWorkerPath() {
  std::error_code ec;
  std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "hpcai500-worker";
  return (self.parent_path() / "hpcai500-worker").string();
}

absl::StatusOr<AgentOptions> ParseAgentArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& token_env) {
  AgentFlags flags;
  std::unique_ptr<CLI::App> app = NewAgentFlagApp(flags);
  RETURN_IF_ERROR(ParseFlags(*app, args));
  AgentOptions& options = flags.options;
  RETURN_IF_ERROR(CheckIdentity(options));
  ReadNodeInventory(flags.nvml_library, options);
  options.cpus = CountCpus();
  RETURN_IF_ERROR(ApplyCounts(flags, options));
  RETURN_IF_ERROR(ApplyPaths(flags, options));
  RETURN_IF_ERROR(ApplyLabels(flags.labels, options.labels));
  RETURN_IF_ERROR(ApplyNetwork(flags.address, options));
  RETURN_IF_ERROR(CheckEnvNames(options.worker_env_names));
  for (const std::string& arg : flags.data) {
    RETURN_IF_ERROR(AddDataDir(arg, &options.data_dirs));
  }
  ASSIGN_OR_RETURN(options.auth_token, ResolveToken(flags.token, token_env));
  ASSIGN_OR_RETURN(options.tls, LoadClientTlsFiles(flags.tls));
  ReadWorkerVersions(options);
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) options.hostname = host;
  return std::move(options);
}

}  // namespace hpcai500::agent
