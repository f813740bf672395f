#include "methodology/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fast_paths.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "common/yaml_text.h"
#include "methodology/spec_fields.h"

namespace hpcai500 {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

absl::Status CheckName(absl::string_view field, const std::string& value,
                       size_t max_len, bool allow_spaces) {
  if (value.empty()) return SpecFieldError(field, "must not be empty");
  if (value.size() > max_len) {
    return SpecFieldError(field,
                          absl::StrCat("longer than ", max_len, " characters"));
  }
  for (char c : value) {
    if (!IsNameChar(c) && !(allow_spaces && c == ' ')) {
      return SpecFieldError(
          field,
          absl::StrCat("character '", std::string(1, c), "' is not allowed"));
    }
  }
  return absl::OkStatus();
}

// The YAML text as a mapping: InvalidArgument when it is too long, not YAML
// (naming the line and column) or not a mapping.
absl::StatusOr<YAML::Node> LoadSpecMapping(std::string_view yaml) {
  if (yaml.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec of ", yaml.size(), " bytes exceeds the limit of ",
                     kMaxSpecBytes));
  }
  ASSIGN_OR_RETURN(std::vector<YAML::Node> documents,
                   LoadYamlDocuments(yaml, "spec"));
  // The first document is the spec (a suite of several is
  // methodology/suite.h's).
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("spec must be a YAML mapping of fields");
  }
  return root;
}

// Reads the mapping's fields into *spec. Returns the keys given, or
// InvalidArgument for a key that is not a plain name, unknown, given twice,
// of the wrong type or missing while required.
absl::StatusOr<std::set<std::string>> ReadSpecFields(const YAML::Node& root,
                                                     v1::RunSpec* spec) {
  const std::vector<SpecField>& fields = SpecFields();
  std::set<std::string> seen;
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError("spec keys must be plain names");
    }
    const std::string key = entry.first.Scalar();
    const auto field =
        std::find_if(fields.begin(), fields.end(),
                     [&key](const SpecField& f) { return f.key == key; });
    if (field == fields.end()) return SpecFieldError(key, "unknown key");
    if (!seen.insert(key).second) return SpecFieldError(key, "given twice");
    RETURN_IF_ERROR(field->read(entry.second, spec));
  }
  for (const SpecField& field : fields) {
    if (field.required && seen.count(field.key) == 0) {
      return SpecFieldError(field.key, "is required");
    }
  }
  return seen;
}

// The registry config the spec names: FieldError for an unknown workload or
// config (listing the known ones) or a config the worker does not implement.
absl::StatusOr<const ConfigInfo*> FindSpecConfig(const v1::RunSpec& spec,
                                                 const Registry& registry) {
  if (registry.FindWorkload(spec.workload()) == nullptr) {
    std::vector<std::string> known;
    for (const WorkloadInfo& w : registry.workloads()) known.push_back(w.name);
    return SpecFieldError(
        "workload", absl::StrCat("unknown workload '", spec.workload(),
                                 "'; known: ", absl::StrJoin(known, ", ")));
  }
  const ConfigInfo* config =
      registry.FindConfig(spec.workload(), spec.config());
  if (config == nullptr) {
    std::vector<std::string> known;
    for (const ConfigInfo& c : registry.configs()) {
      if (c.workload == spec.workload()) known.push_back(c.name);
    }
    return SpecFieldError(
        "config",
        absl::StrCat("unknown config '", spec.config(), "' of ",
                     spec.workload(), "; known: ", absl::StrJoin(known, ", ")));
  }
  if (!config->implemented) {
    return SpecFieldError("config", absl::StrCat("config '", spec.config(),
                                                 "' is not implemented by this "
                                                 "build's worker yet"));
  }
  return config;
}

// Where the run may go: its queue's name, its priority, its constraints.
absl::Status CheckPlacementFields(const v1::RunSpec& spec) {
  if (!spec.queue().empty()) {
    RETURN_IF_ERROR(
        CheckName("queue", spec.queue(), 64, /*allow_spaces=*/false));
  }
  if (spec.has_priority()) {
    RETURN_IF_ERROR(CheckInRange(SpecFieldName("priority"), spec.priority(), 0,
                                 kMaxPriority));
  }
  if (spec.constraints_size() > kMaxConstraints) {
    return SpecFieldError(
        "constraints", absl::StrCat("at most ", kMaxConstraints,
                                    " labels, got ", spec.constraints_size()));
  }
  for (const auto& [key, value] : spec.constraints()) {
    RETURN_IF_ERROR(CheckName("constraints", key, 64, /*allow_spaces=*/false));
    RETURN_IF_ERROR(
        CheckName("constraints", value, 128, /*allow_spaces=*/false));
  }
  return absl::OkStatus();
}

// What makes a run a point of a sweep (hpcai500 sweep): the sweep's id, a
// name, and its scaling mode; both empty for a run submitted alone.
absl::Status CheckSweepFields(const v1::RunSpec& spec) {
  if (!spec.sweep().empty()) {
    RETURN_IF_ERROR(
        CheckName("sweep", spec.sweep(), 128, /*allow_spaces=*/false));
  }
  if (spec.scaling().empty()) return absl::OkStatus();
  if (spec.sweep().empty()) {
    return SpecFieldError("scaling",
                          "only a point of a sweep has one (sweep: ID)");
  }
  return CheckOneOf<Scaling>(SpecFieldName("scaling"), spec.scaling());
}

// Each fast path needs device cuda.
absl::Status CheckFastPaths(const v1::RunSpec& spec) {
  for (const std::string& path : FastPathsOn(spec)) {
    if (spec.device() != Name(Device::kCuda)) {
      return SpecFieldError(path, "needs device cuda");
    }
  }
  // The captured step holds the gradient all-reduce; PowerSGD decides on the
  // host every step (worker/train/cuda_graph_step.h), so the worker would
  // refuse the run on the node: refuse it here.
  if (spec.cuda_graph() && spec.compression() == Name(Compression::kPowerSgd)) {
    return SpecFieldError(
        "cuda_graph",
        "cannot capture compression powersgd; use none, fp16 or "
        "bf16");
  }
  return absl::OkStatus();
}

// The fields that need no registry: sizes, the vocabulary's names and what
// each needs of the device, seed and system.
absl::Status CheckRunFields(const v1::RunSpec& spec) {
  RETURN_IF_ERROR(
      CheckInRange(SpecFieldName("nodes"), spec.nodes(), 1, kMaxNodes));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("ranks_per_node"),
                               spec.ranks_per_node(), 1, kMaxRanksPerNode));
  RETURN_IF_ERROR(CheckOneOf<Device>(SpecFieldName("device"), spec.device()));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("batch_size"), spec.batch_size(),
                               1, kMaxBatchSize));
  RETURN_IF_ERROR(
      CheckOneOf<Precision>(SpecFieldName("precision"), spec.precision()));
  if (spec.precision() == Name(Precision::kFp16) &&
      spec.device() != Name(Device::kCuda)) {
    return SpecFieldError("precision", "fp16 needs device cuda");
  }
  RETURN_IF_ERROR(CheckOneOf<Compression>(SpecFieldName("compression"),
                                          spec.compression()));
  if (spec.compression() == Name(Compression::kBf16) &&
      spec.device() != Name(Device::kCuda)) {
    return SpecFieldError(
        "compression",
        "bf16 needs device cuda (NCCL); Gloo carries bf16 only "
        "from LibTorch 2.2");
  }
  RETURN_IF_ERROR(
      CheckInRange(SpecFieldName("seed"), spec.seed(), 0, kMaxSpecSeed));
  RETURN_IF_ERROR(CheckFastPaths(spec));
  RETURN_IF_ERROR(
      ParseLauncher(SpecFieldName("launcher"), spec.launcher()).status());
  RETURN_IF_ERROR(CheckPlacementFields(spec));
  RETURN_IF_ERROR(CheckSweepFields(spec));
  return CheckName("system", spec.system(), 128, /*allow_spaces=*/true);
}

// Each fast path on is one the config can take (its registry fast_paths:
// the worker would refuse the run on the node otherwise).
absl::Status CheckFastPathsFitTheConfig(const v1::RunSpec& spec,
                                        const ConfigInfo& config,
                                        const Registry& registry) {
  for (const std::string& path : FastPathsOn(spec)) {
    const auto has = [&path](const ConfigInfo& c) {
      return std::find(c.fast_paths.begin(), c.fast_paths.end(), path) !=
             c.fast_paths.end();
    };
    if (has(config)) continue;
    std::vector<std::string> able;
    for (const ConfigInfo& c : registry.configs()) {
      if (has(c)) able.push_back(c.workload + "/" + c.name);
    }
    return SpecFieldError(
        path, absl::StrCat("config ", spec.workload(), "/", spec.config(),
                           " cannot take it (its model or data has no such "
                           "path); configs that can: ",
                           able.empty() ? "none" : JoinInProse(able)));
  }
  return absl::OkStatus();
}

// min_epochs only with abort_if_hopeless (alone it would ask for nothing),
// and within the epoch budget.
absl::Status CheckEarlyAbort(const v1::RunSpec& spec) {
  if (spec.min_epochs() != 0 && spec.abort_if_hopeless() == 0) {
    return SpecFieldError(
        "min_epochs",
        "needs abort_if_hopeless (the probability below which "
        "the run is aborted)");
  }
  return CheckInRange(SpecFieldName("min_epochs"), spec.min_epochs(), 0,
                      spec.epochs());
}

// Epochs within the config's budget, the repetitions and early abort.
absl::Status CheckBudget(const v1::RunSpec& spec, const ConfigInfo& config) {
  if (spec.epochs() > config.epochs) {
    return SpecFieldError(
        "epochs", absl::StrCat("exceeds the epoch budget of ", spec.config(),
                               " (", config.epochs, "), got ", spec.epochs()));
  }
  RETURN_IF_ERROR(
      CheckInRange(SpecFieldName("epochs"), spec.epochs(), 1, config.epochs));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("repetitions"), spec.repetitions(),
                               1, kMaxRepetitions));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("max_retries"), spec.max_retries(),
                               0, kMaxRetries));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("time_limit"), spec.time_limit_s(),
                               0, kMaxTimeLimitSeconds));
  return CheckEarlyAbort(spec);
}

// The hardware level keeps the reference recipe: only the hardware and the
// reference's two precision variants (ReferenceBatchSize) may differ.
absl::Status CheckHardwareLevel(const v1::RunSpec& spec,
                                const ConfigInfo& config) {
  if (spec.level() != Name(Level::kHardware)) return absl::OkStatus();
  if (spec.compression() != Name(Compression::kNone)) {
    return SpecFieldError("compression",
                          "level hardware keeps the reference software stack; "
                          "compression needs level system or free");
  }
  if (const std::vector<std::string> on = FastPathsOn(spec); !on.empty()) {
    return SpecFieldError(
        on.front(), absl::StrCat("level hardware keeps the "
                                 "reference software stack; ",
                                 on.front(), " needs level system or free"));
  }
  const int reference =
      ReferenceBatchSize(config, *Parse<Precision>(spec.precision()));
  if (spec.batch_size() != reference) {
    return SpecFieldError(
        "batch_size",
        absl::StrCat("level hardware keeps the reference batch of ", reference,
                     " per rank for ", spec.precision(), ", got ",
                     spec.batch_size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOneOf(absl::string_view what, absl::string_view value,
                        absl::Span<const absl::string_view> allowed) {
  for (absl::string_view a : allowed) {
    if (value == a) return absl::OkStatus();
  }
  return NotOneOfError(what, value, absl::StrJoin(allowed, ", "));
}

absl::Status NotOneOfError(absl::string_view what, absl::string_view value,
                           absl::string_view names) {
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": must be one of ", names, "; got '", value.substr(0, 80), "'"));
}

absl::StatusOr<Launcher> ParseLauncher(absl::string_view what,
                                       absl::string_view name) {
  if (name.empty()) return Launcher::kAgent;
  std::optional<Launcher> launcher =
      Parse<Launcher>(std::string_view(name.data(), name.size()));
  if (!launcher) return NotOneOfError(what, name, JoinNames<Launcher>(", "));
  return *launcher;
}

absl::Status ValidateRunSpec(const v1::RunSpec& spec,
                             const Registry& registry) {
  RETURN_IF_ERROR(CheckName("name", spec.name(), 64, /*allow_spaces=*/false));
  ASSIGN_OR_RETURN(const ConfigInfo* config, FindSpecConfig(spec, registry));
  RETURN_IF_ERROR(CheckOneOf<Level>(SpecFieldName("level"), spec.level()));
  // LARS changes the optimizer the reference recipe fixes: free level only.
  if (config->optimizer == "lars" && spec.level() != Name(Level::kFree)) {
    return SpecFieldError(
        "config", absl::StrCat("config '", spec.config(),
                               "' uses LARS, which only level free allows "
                               "(level is '",
                               spec.level(), "')"));
  }
  RETURN_IF_ERROR(CheckRunFields(spec));
  RETURN_IF_ERROR(CheckBudget(spec, *config));
  RETURN_IF_ERROR(CheckFastPathsFitTheConfig(spec, *config, registry));
  return CheckHardwareLevel(spec, *config);
}

absl::StatusOr<v1::RunSpec> ParseRunSpec(std::string_view yaml,
                                         const Registry& registry) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadSpecMapping(yaml));
  v1::RunSpec spec;
  spec.set_repetitions(1);
  spec.set_max_retries(1);
  spec.set_compression(std::string(Name(Compression::kNone)));
  spec.set_launcher(std::string(Name(Launcher::kAgent)));
  ASSIGN_OR_RETURN(std::set<std::string> seen, ReadSpecFields(root, &spec));
  // Defaults that depend on the registry; validate the workload and config
  // first so that the lookup below is safe.
  const ConfigInfo* config =
      registry.FindConfig(spec.workload(), spec.config());
  if (seen.count("epochs") == 0 && config != nullptr) {
    spec.set_epochs(config->epochs);
  }
  RETURN_IF_ERROR(ValidateRunSpec(spec, registry));
  spec.set_ranked(spec.epochs() == config->epochs && config->real_data);
  return spec;
}

std::vector<std::string> FastPathsOn(const v1::RunSpec& spec) {
  return FastPathNames([&spec](FastPath path) {
    switch (path) {
      case FastPath::kFusedBn:
        return spec.fused_bn();
      case FastPath::kCudaGraph:
        return spec.cuda_graph();
      case FastPath::kGpuDecode:
        return spec.gpu_decode();
    }
    return false;
  });
}

std::string RunSpecToYaml(const v1::RunSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const SpecField& field : SpecFields()) field.write(spec, out);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hpcai500
