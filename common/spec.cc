#include "common/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/fast_paths.h"
#include "common/limits.h"
#include "common/numbers.h"
#include "common/status_macros.h"
#include "common/yaml_text.h"

namespace hpcai500 {
namespace {

// How this file's errors name a field: "field '<name>'".
std::string Field(absl::string_view name) {
  return absl::StrCat("field '", name, "'");
}

absl::Status FieldError(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(Field(field), ": ", why));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

absl::Status CheckName(absl::string_view field, const std::string& value,
                       size_t max_len, bool allow_spaces) {
  if (value.empty()) return FieldError(field, "must not be empty");
  if (value.size() > max_len) {
    return FieldError(field,
                      absl::StrCat("longer than ", max_len, " characters"));
  }
  for (char c : value) {
    if (!IsNameChar(c) && !(allow_spaces && c == ' ')) {
      return FieldError(field, absl::StrCat("character '", std::string(1, c),
                                            "' is not allowed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ScalarString(const YAML::Node& node,
                                         absl::string_view field) {
  if (!node.IsScalar()) return FieldError(field, "must be a string");
  return node.Scalar();
}

absl::StatusOr<int64_t> ScalarInt(const YAML::Node& node,
                                  absl::string_view field) {
  if (!node.IsScalar()) return FieldError(field, "must be an integer");
  const std::string& text = node.Scalar();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    return FieldError(field,
                      absl::StrCat("must be an integer, got '", text, "'"));
  }
  return static_cast<int64_t>(v);
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
  // The first document is the spec (a suite of several is common/suite.h's).
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("spec must be a YAML mapping of fields");
  }
  return root;
}

// Reads one YAML value into a RunSpec field.
using Setter = std::function<absl::Status(const YAML::Node&)>;

Setter StringSetter(absl::string_view field,
                    void (v1::RunSpec::*set)(const std::string&),
                    v1::RunSpec* s) {
  return [=](const YAML::Node& n) -> absl::Status {
    ASSIGN_OR_RETURN(std::string v, ScalarString(n, field));
    (s->*set)(v);
    return absl::OkStatus();
  };
}

Setter Int32Setter(absl::string_view field, void (v1::RunSpec::*set)(int32_t),
                   v1::RunSpec* s) {
  return [=](const YAML::Node& n) -> absl::Status {
    ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, field));
    if (v < INT32_MIN || v > INT32_MAX) {
      return FieldError(field, absl::StrCat("out of range: ", v));
    }
    (s->*set)(static_cast<int32_t>(v));
    return absl::OkStatus();
  };
}

Setter BoolSetter(absl::string_view field, void (v1::RunSpec::*set)(bool),
                  v1::RunSpec* s) {
  return [=](const YAML::Node& n) -> absl::Status {
    ASSIGN_OR_RETURN(std::string v, ScalarString(n, field));
    if (v != "true" && v != "false") {
      return FieldError(field, absl::StrCat("must be true or false, got '",
                                            v.substr(0, 80), "'"));
    }
    (s->*set)(v == "true");
    return absl::OkStatus();
  };
}

// time_limit: whole seconds (3600) or a duration with units ("90m",
// "1h30m", "45s").
absl::StatusOr<int64_t> TimeLimitSeconds(const YAML::Node& n) {
  if (!n.IsScalar()) return FieldError("time_limit", "must be a duration");
  return DurationSeconds(n.Scalar(), Field("time_limit"));
}

// constraints: a mapping of label to value ({gpu_model: h200, rack: 3}) or
// a list of "label=value" strings (["gpu_model=h200"]).
absl::Status ReadConstraints(const YAML::Node& n, v1::RunSpec* spec) {
  auto add = [spec](const std::string& key,
                    const std::string& value) -> absl::Status {
    if (!spec->mutable_constraints()->insert({key, value}).second) {
      return FieldError(
          "constraints",
          absl::StrCat("label '", key.substr(0, 64), "' given twice"));
    }
    return absl::OkStatus();
  };
  if (n.IsMap()) {
    for (const auto& entry : n) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
        return FieldError("constraints", "must map label names to values");
      }
      RETURN_IF_ERROR(add(entry.first.Scalar(), entry.second.Scalar()));
    }
    return absl::OkStatus();
  }
  if (!n.IsSequence()) {
    return FieldError("constraints",
                      "must be a mapping {label: value} or a list of "
                      "\"label=value\"");
  }
  for (const auto& item : n) {
    const std::string text = item.IsScalar() ? item.Scalar() : "";
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return FieldError("constraints",
                        absl::StrCat("each item must be \"label=value\", got '",
                                     text.substr(0, 80), "'"));
    }
    RETURN_IF_ERROR(add(text.substr(0, eq), text.substr(eq + 1)));
  }
  return absl::OkStatus();
}

// Every key a spec may hold, writing into *spec (borrowed for the setters'
// lifetime).
std::map<std::string, Setter> SpecSetters(v1::RunSpec* spec) {
  return {
      {"name", StringSetter("name", &v1::RunSpec::set_name, spec)},
      {"workload", StringSetter("workload", &v1::RunSpec::set_workload, spec)},
      {"config", StringSetter("config", &v1::RunSpec::set_config, spec)},
      {"level", StringSetter("level", &v1::RunSpec::set_level, spec)},
      {"device", StringSetter("device", &v1::RunSpec::set_device, spec)},
      {"precision",
       StringSetter("precision", &v1::RunSpec::set_precision, spec)},
      {"compression",
       StringSetter("compression", &v1::RunSpec::set_compression, spec)},
      {"system", StringSetter("system", &v1::RunSpec::set_system, spec)},
      {"nodes", Int32Setter("nodes", &v1::RunSpec::set_nodes, spec)},
      {"ranks_per_node",
       Int32Setter("ranks_per_node", &v1::RunSpec::set_ranks_per_node, spec)},
      {"batch_size",
       Int32Setter("batch_size", &v1::RunSpec::set_batch_size, spec)},
      {"epochs", Int32Setter("epochs", &v1::RunSpec::set_epochs, spec)},
      {"repetitions",
       Int32Setter("repetitions", &v1::RunSpec::set_repetitions, spec)},
      {"max_retries",
       Int32Setter("max_retries", &v1::RunSpec::set_max_retries, spec)},
      {"time_limit",
       [spec](const YAML::Node& n) -> absl::Status {
         ASSIGN_OR_RETURN(int64_t seconds, TimeLimitSeconds(n));
         spec->set_time_limit_s(seconds);
         return absl::OkStatus();
       }},
      {"queue", StringSetter("queue", &v1::RunSpec::set_queue, spec)},
      {"launcher", StringSetter("launcher", &v1::RunSpec::set_launcher, spec)},
      {"sweep", StringSetter("sweep", &v1::RunSpec::set_sweep, spec)},
      {"scaling", StringSetter("scaling", &v1::RunSpec::set_scaling, spec)},
      {"priority",
       [spec](const YAML::Node& n) -> absl::Status {
         ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, "priority"));
         RETURN_IF_ERROR(CheckInRange(Field("priority"), v, 0, kMaxPriority));
         spec->set_priority(static_cast<int32_t>(v));
         return absl::OkStatus();
       }},
      {"constraints",
       [spec](const YAML::Node& n) { return ReadConstraints(n, spec); }},
      {"abort_if_hopeless",
       [spec](const YAML::Node& n) -> absl::Status {
         ASSIGN_OR_RETURN(std::string text,
                          ScalarString(n, "abort_if_hopeless"));
         const std::optional<double> p = ParseNumberAbove(text, 0, 1);
         if (!p.has_value() || *p >= 1) {
           return FieldError("abort_if_hopeless",
                             absl::StrCat("must be a probability above 0 and "
                                          "below 1, got '",
                                          text, "'"));
         }
         spec->set_abort_if_hopeless(*p);
         return absl::OkStatus();
       }},
      {"min_epochs",
       Int32Setter("min_epochs", &v1::RunSpec::set_min_epochs, spec)},
      {"fused_bn", BoolSetter("fused_bn", &v1::RunSpec::set_fused_bn, spec)},
      {"cuda_graph",
       BoolSetter("cuda_graph", &v1::RunSpec::set_cuda_graph, spec)},
      {"gpu_decode",
       BoolSetter("gpu_decode", &v1::RunSpec::set_gpu_decode, spec)},
      {"seed",
       [spec](const YAML::Node& n) -> absl::Status {
         ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, "seed"));
         spec->set_seed(v);
         return absl::OkStatus();
       }},
  };
}

// Reads the mapping's fields into *spec. Returns the keys given, or
// InvalidArgument for a key that is not a plain name, unknown, given twice,
// of the wrong type or missing while required.
absl::StatusOr<std::set<std::string>> ReadSpecFields(const YAML::Node& root,
                                                     v1::RunSpec* spec) {
  const std::map<std::string, Setter> setters = SpecSetters(spec);
  const std::vector<std::string> required = {
      "name",   "workload",   "config",    "level", "nodes", "ranks_per_node",
      "device", "batch_size", "precision", "seed",  "system"};
  std::set<std::string> seen;
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError("spec keys must be plain names");
    }
    const std::string key = entry.first.Scalar();
    auto setter = setters.find(key);
    if (setter == setters.end()) {
      return FieldError(key, "unknown key");
    }
    if (!seen.insert(key).second) return FieldError(key, "given twice");
    RETURN_IF_ERROR(setter->second(entry.second));
  }
  for (const std::string& key : required) {
    if (seen.count(key) == 0) return FieldError(key, "is required");
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
    return FieldError("workload",
                      absl::StrCat("unknown workload '", spec.workload(),
                                   "'; known: ", absl::StrJoin(known, ", ")));
  }
  const ConfigInfo* config =
      registry.FindConfig(spec.workload(), spec.config());
  if (config == nullptr) {
    std::vector<std::string> known;
    for (const ConfigInfo& c : registry.configs()) {
      if (c.workload == spec.workload()) known.push_back(c.name);
    }
    return FieldError(
        "config",
        absl::StrCat("unknown config '", spec.config(), "' of ",
                     spec.workload(), "; known: ", absl::StrJoin(known, ", ")));
  }
  if (!config->implemented) {
    return FieldError("config", absl::StrCat("config '", spec.config(),
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
    RETURN_IF_ERROR(
        CheckInRange(Field("priority"), spec.priority(), 0, kMaxPriority));
  }
  if (spec.constraints_size() > kMaxConstraints) {
    return FieldError("constraints",
                      absl::StrCat("at most ", kMaxConstraints, " labels, got ",
                                   spec.constraints_size()));
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
    return FieldError("scaling", "only a point of a sweep has one (sweep: ID)");
  }
  return CheckOneOf<Scaling>(Field("scaling"), spec.scaling());
}

// Each fast path needs device cuda.
absl::Status CheckFastPaths(const v1::RunSpec& spec) {
  for (const std::string& path : FastPathsOn(spec)) {
    if (spec.device() != Name(Device::kCuda)) {
      return FieldError(path, "needs device cuda");
    }
  }
  // The captured step holds the gradient all-reduce; PowerSGD decides on the
  // host every step (worker/train/cuda_graph_step.h), so the worker would
  // refuse the run on the node: refuse it here.
  if (spec.cuda_graph() && spec.compression() == Name(Compression::kPowerSgd)) {
    return FieldError("cuda_graph",
                      "cannot capture compression powersgd; use none, fp16 or "
                      "bf16");
  }
  return absl::OkStatus();
}

// The fields that need no registry: sizes, the vocabulary's names and what
// each needs of the device, seed and system.
absl::Status CheckRunFields(const v1::RunSpec& spec) {
  RETURN_IF_ERROR(CheckInRange(Field("nodes"), spec.nodes(), 1, kMaxNodes));
  RETURN_IF_ERROR(CheckInRange(Field("ranks_per_node"), spec.ranks_per_node(),
                               1, kMaxRanksPerNode));
  RETURN_IF_ERROR(CheckOneOf<Device>(Field("device"), spec.device()));
  RETURN_IF_ERROR(
      CheckInRange(Field("batch_size"), spec.batch_size(), 1, kMaxBatchSize));
  RETURN_IF_ERROR(CheckOneOf<Precision>(Field("precision"), spec.precision()));
  if (spec.precision() == Name(Precision::kFp16) &&
      spec.device() != Name(Device::kCuda)) {
    return FieldError("precision", "fp16 needs device cuda");
  }
  RETURN_IF_ERROR(
      CheckOneOf<Compression>(Field("compression"), spec.compression()));
  if (spec.compression() == Name(Compression::kBf16) &&
      spec.device() != Name(Device::kCuda)) {
    return FieldError("compression",
                      "bf16 needs device cuda (NCCL); Gloo carries bf16 only "
                      "from LibTorch 2.2");
  }
  RETURN_IF_ERROR(CheckInRange(Field("seed"), spec.seed(), 0, kMaxSpecSeed));
  RETURN_IF_ERROR(CheckFastPaths(spec));
  RETURN_IF_ERROR(ParseLauncher(Field("launcher"), spec.launcher()).status());
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
    return FieldError(
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
    return FieldError("min_epochs",
                      "needs abort_if_hopeless (the probability below which "
                      "the run is aborted)");
  }
  return CheckInRange(Field("min_epochs"), spec.min_epochs(), 0, spec.epochs());
}

// Epochs within the config's budget, the repetitions and early abort.
absl::Status CheckBudget(const v1::RunSpec& spec, const ConfigInfo& config) {
  if (spec.epochs() > config.epochs) {
    return FieldError(
        "epochs", absl::StrCat("exceeds the epoch budget of ", spec.config(),
                               " (", config.epochs, "), got ", spec.epochs()));
  }
  RETURN_IF_ERROR(
      CheckInRange(Field("epochs"), spec.epochs(), 1, config.epochs));
  RETURN_IF_ERROR(CheckInRange(Field("repetitions"), spec.repetitions(), 1,
                               kMaxRepetitions));
  RETURN_IF_ERROR(
      CheckInRange(Field("max_retries"), spec.max_retries(), 0, kMaxRetries));
  RETURN_IF_ERROR(CheckInRange(Field("time_limit"), spec.time_limit_s(), 0,
                               kMaxTimeLimitSeconds));
  return CheckEarlyAbort(spec);
}

// The hardware level keeps the reference recipe: only the hardware and the
// reference's two precision variants (ReferenceBatchSize) may differ.
absl::Status CheckHardwareLevel(const v1::RunSpec& spec,
                                const ConfigInfo& config) {
  if (spec.level() != Name(Level::kHardware)) return absl::OkStatus();
  if (spec.compression() != Name(Compression::kNone)) {
    return FieldError("compression",
                      "level hardware keeps the reference software stack; "
                      "compression needs level system or free");
  }
  if (const std::vector<std::string> on = FastPathsOn(spec); !on.empty()) {
    return FieldError(on.front(),
                      absl::StrCat("level hardware keeps the "
                                   "reference software stack; ",
                                   on.front(), " needs level system or free"));
  }
  const int reference =
      ReferenceBatchSize(config, *Parse<Precision>(spec.precision()));
  if (spec.batch_size() != reference) {
    return FieldError(
        "batch_size",
        absl::StrCat("level hardware keeps the reference batch of ", reference,
                     " per rank for ", spec.precision(), ", got ",
                     spec.batch_size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckInRange(absl::string_view what, int64_t value, int64_t low,
                          int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": must be between ", low, " and ", high, ", got ", value));
  }
  return absl::OkStatus();
}

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
  RETURN_IF_ERROR(CheckOneOf<Level>(Field("level"), spec.level()));
  // LARS changes the optimizer the reference recipe fixes: free level only.
  if (config->optimizer == "lars" && spec.level() != Name(Level::kFree)) {
    return FieldError("config",
                      absl::StrCat("config '", spec.config(),
                                   "' uses LARS, which only level free allows "
                                   "(level is '",
                                   spec.level(), "')"));
  }
  RETURN_IF_ERROR(CheckRunFields(spec));
  RETURN_IF_ERROR(CheckBudget(spec, *config));
  RETURN_IF_ERROR(CheckFastPathsFitTheConfig(spec, *config, registry));
  return CheckHardwareLevel(spec, *config);
}

absl::StatusOr<int64_t> DurationSeconds(absl::string_view text,
                                        absl::string_view what) {
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds)) return seconds;  // range: caller's
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": must be seconds or a duration like 90m or 1h30m, got '",
        text.substr(0, 80), "'"));
  }
  return absl::ToInt64Seconds(d);
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
  out << YAML::Key << "name" << YAML::Value << spec.name();
  out << YAML::Key << "workload" << YAML::Value << spec.workload();
  out << YAML::Key << "config" << YAML::Value << spec.config();
  out << YAML::Key << "level" << YAML::Value << spec.level();
  out << YAML::Key << "nodes" << YAML::Value << spec.nodes();
  out << YAML::Key << "ranks_per_node" << YAML::Value << spec.ranks_per_node();
  out << YAML::Key << "device" << YAML::Value << spec.device();
  out << YAML::Key << "batch_size" << YAML::Value << spec.batch_size();
  out << YAML::Key << "precision" << YAML::Value << spec.precision();
  out << YAML::Key << "compression" << YAML::Value << spec.compression();
  out << YAML::Key << "seed" << YAML::Value << spec.seed();
  out << YAML::Key << "system" << YAML::Value << spec.system();
  out << YAML::Key << "epochs" << YAML::Value << spec.epochs();
  out << YAML::Key << "repetitions" << YAML::Value << spec.repetitions();
  out << YAML::Key << "max_retries" << YAML::Value << spec.max_retries();
  if (spec.time_limit_s() > 0) {
    out << YAML::Key << "time_limit" << YAML::Value << spec.time_limit_s();
  }
  if (!spec.queue().empty()) {
    out << YAML::Key << "queue" << YAML::Value << spec.queue();
  }
  if (spec.abort_if_hopeless() > 0) {
    out << YAML::Key << "abort_if_hopeless" << YAML::Value
        << spec.abort_if_hopeless();
    out << YAML::Key << "min_epochs" << YAML::Value << spec.min_epochs();
  }
  for (const std::string& path : FastPathsOn(spec)) {
    out << YAML::Key << path << YAML::Value << true;
  }
  // Only another than the default: the text of a spec without the field
  // stays what it was.
  if (!spec.launcher().empty() && spec.launcher() != Name(Launcher::kAgent)) {
    out << YAML::Key << "launcher" << YAML::Value << spec.launcher();
  }
  if (spec.has_priority()) {
    out << YAML::Key << "priority" << YAML::Value << spec.priority();
  }
  if (!spec.sweep().empty()) {
    out << YAML::Key << "sweep" << YAML::Value << spec.sweep();
  }
  if (!spec.scaling().empty()) {
    out << YAML::Key << "scaling" << YAML::Value << spec.scaling();
  }
  if (spec.constraints_size() > 0) {
    // In key order, so that the text is the same for the same spec.
    const std::map<std::string, std::string> sorted(spec.constraints().begin(),
                                                    spec.constraints().end());
    out << YAML::Key << "constraints" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : sorted) {
      out << YAML::Key << key << YAML::Value << value;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace hpcai500
