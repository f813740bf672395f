#include "methodology/spec_fields.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/limits.h"
#include "common/numbers.h"
#include "common/status_macros.h"
#include "common/vocabulary.h"

namespace hpcai500 {
namespace {

using Read = std::function<absl::Status(const YAML::Node&, v1::RunSpec*)>;
using Write = std::function<void(const v1::RunSpec&, YAML::Emitter&)>;
template <typename T>
using Getter = T (v1::RunSpec::*)() const;
template <typename T>
using Setter = void (v1::RunSpec::*)(T);

enum Presence { kRequired, kOptional };
// When a row writes its key: always, or only while the field is not at its
// proto default (empty, 0, false).
enum class Written { kAlways, kWhenSet };

absl::StatusOr<std::string> ScalarString(const YAML::Node& node,
                                         absl::string_view key) {
  if (!node.IsScalar()) return SpecFieldError(key, "must be a string");
  return node.Scalar();
}

absl::StatusOr<int64_t> ScalarInt(const YAML::Node& node,
                                  absl::string_view key) {
  if (!node.IsScalar()) return SpecFieldError(key, "must be an integer");
  const std::string& text = node.Scalar();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    return SpecFieldError(key,
                          absl::StrCat("must be an integer, got '", text, "'"));
  }
  return static_cast<int64_t>(v);
}

Read ReadText(std::string key, Setter<const std::string&> set) {
  return [key = std::move(key), set](const YAML::Node& n,
                                     v1::RunSpec* s) -> absl::Status {
    ASSIGN_OR_RETURN(std::string v, ScalarString(n, key));
    (s->*set)(v);
    return absl::OkStatus();
  };
}

Read ReadInt32(std::string key, Setter<int32_t> set) {
  return [key = std::move(key), set](const YAML::Node& n,
                                     v1::RunSpec* s) -> absl::Status {
    ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, key));
    if (v < INT32_MIN || v > INT32_MAX) {
      return SpecFieldError(key, absl::StrCat("out of range: ", v));
    }
    (s->*set)(static_cast<int32_t>(v));
    return absl::OkStatus();
  };
}

Read ReadBool(std::string key, Setter<bool> set) {
  return [key = std::move(key), set](const YAML::Node& n,
                                     v1::RunSpec* s) -> absl::Status {
    ASSIGN_OR_RETURN(std::string v, ScalarString(n, key));
    if (v != "true" && v != "false") {
      return SpecFieldError(key, absl::StrCat("must be true or false, got '",
                                              v.substr(0, 80), "'"));
    }
    (s->*set)(v == "true");
    return absl::OkStatus();
  };
}

// time_limit: whole seconds (3600) or a duration with units ("90m",
// "1h30m", "45s").
absl::Status ReadTimeLimit(const YAML::Node& n, v1::RunSpec* spec) {
  if (!n.IsScalar()) return SpecFieldError("time_limit", "must be a duration");
  ASSIGN_OR_RETURN(int64_t seconds,
                   DurationSeconds(n.Scalar(), SpecFieldName("time_limit")));
  spec->set_time_limit_s(seconds);
  return absl::OkStatus();
}

absl::Status ReadSeed(const YAML::Node& n, v1::RunSpec* spec) {
  ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, "seed"));
  spec->set_seed(v);
  return absl::OkStatus();
}

absl::Status ReadPriority(const YAML::Node& n, v1::RunSpec* spec) {
  ASSIGN_OR_RETURN(int64_t v, ScalarInt(n, "priority"));
  RETURN_IF_ERROR(CheckInRange(SpecFieldName("priority"), v, 0, kMaxPriority));
  spec->set_priority(static_cast<int32_t>(v));
  return absl::OkStatus();
}

absl::Status ReadAbortIfHopeless(const YAML::Node& n, v1::RunSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ScalarString(n, "abort_if_hopeless"));
  const std::optional<double> p = ParseNumberAbove(text, 0, 1);
  if (!p.has_value() || *p >= 1) {
    return SpecFieldError(
        "abort_if_hopeless",
        absl::StrCat("must be a probability above 0 and below 1, got '", text,
                     "'"));
  }
  spec->set_abort_if_hopeless(*p);
  return absl::OkStatus();
}

// constraints: a mapping of label to value ({gpu_model: h200, rack: 3}) or
// a list of "label=value" strings (["gpu_model=h200"]).
absl::Status ReadConstraints(const YAML::Node& n, v1::RunSpec* spec) {
  auto add = [spec](const std::string& key,
                    const std::string& value) -> absl::Status {
    if (!spec->mutable_constraints()->insert({key, value}).second) {
      return SpecFieldError(
          "constraints",
          absl::StrCat("label '", key.substr(0, 64), "' given twice"));
    }
    return absl::OkStatus();
  };
  if (n.IsMap()) {
    for (const auto& entry : n) {
      if (!entry.first.IsScalar() || !entry.second.IsScalar()) {
        return SpecFieldError("constraints", "must map label names to values");
      }
      RETURN_IF_ERROR(add(entry.first.Scalar(), entry.second.Scalar()));
    }
    return absl::OkStatus();
  }
  if (!n.IsSequence()) {
    return SpecFieldError("constraints",
                          "must be a mapping {label: value} or a list of "
                          "\"label=value\"");
  }
  for (const auto& item : n) {
    const std::string text = item.IsScalar() ? item.Scalar() : "";
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return SpecFieldError(
          "constraints",
          absl::StrCat("each item must be \"label=value\", got '",
                       text.substr(0, 80), "'"));
    }
    RETURN_IF_ERROR(add(text.substr(0, eq), text.substr(eq + 1)));
  }
  return absl::OkStatus();
}

// Writes "<key>: <get()>" where `written` holds for the spec.
template <typename T>
Write WriteIf(std::string key, Getter<T> get,
              std::function<bool(const v1::RunSpec&)> written) {
  return [key = std::move(key), get, written = std::move(written)](
             const v1::RunSpec& s, YAML::Emitter& out) {
    if (written(s)) out << YAML::Key << key << YAML::Value << (s.*get)();
  };
}

template <typename T>
Write WriteValue(std::string key, Getter<T> get, Written when) {
  return WriteIf<T>(std::move(key), get, [get, when](const v1::RunSpec& s) {
    return when == Written::kAlways || (s.*get)() != std::decay_t<T>{};
  });
}

// In key order, so that the text is the same for the same spec.
void WriteConstraints(const v1::RunSpec& spec, YAML::Emitter& out) {
  if (spec.constraints_size() == 0) return;
  const std::map<std::string, std::string> sorted(spec.constraints().begin(),
                                                  spec.constraints().end());
  out << YAML::Key << "constraints" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : sorted) {
    out << YAML::Key << key << YAML::Value << value;
  }
  out << YAML::EndMap;
}

SpecField Text(std::string key, Presence presence, Written when,
               Getter<const std::string&> get, Setter<const std::string&> set,
               std::string example) {
  return {key, presence == kRequired, ReadText(key, set),
          WriteValue(key, get, when), std::move(example)};
}

SpecField Int32(std::string key, Presence presence, Written when,
                Getter<int32_t> get, Setter<int32_t> set, std::string example) {
  return {key, presence == kRequired, ReadInt32(key, set),
          WriteValue(key, get, when), std::move(example)};
}

// A fast path (common/fast_paths.h): off unless given, written when on.
SpecField FastPath(std::string key, Getter<bool> get, Setter<bool> set) {
  return {key, false, ReadBool(key, set),
          WriteValue(key, get, Written::kWhenSet), "true"};
}

std::vector<SpecField> BuildSpecFields() {
  using R = v1::RunSpec;
  constexpr Written kAlways = Written::kAlways;
  constexpr Written kWhenSet = Written::kWhenSet;
  return {
      Text("name", kRequired, kAlways, &R::name, &R::set_name, "all-fields"),
      Text("workload", kRequired, kAlways, &R::workload, &R::set_workload,
           "image_classification"),
      Text("config", kRequired, kAlways, &R::config, &R::set_config,
           "imagenet"),
      Text("level", kRequired, kAlways, &R::level, &R::set_level, "free"),
      Int32("nodes", kRequired, kAlways, &R::nodes, &R::set_nodes, "2"),
      Int32("ranks_per_node", kRequired, kAlways, &R::ranks_per_node,
            &R::set_ranks_per_node, "4"),
      Text("device", kRequired, kAlways, &R::device, &R::set_device, "cuda"),
      Int32("batch_size", kRequired, kAlways, &R::batch_size,
            &R::set_batch_size, "32"),
      Text("precision", kRequired, kAlways, &R::precision, &R::set_precision,
           "bf16"),
      Text("compression", kOptional, kAlways, &R::compression,
           &R::set_compression, "fp16"),
      {"seed", true, ReadSeed, WriteValue("seed", &R::seed, kAlways), "7"},
      Text("system", kRequired, kAlways, &R::system, &R::set_system, "lab box"),
      Int32("epochs", kOptional, kAlways, &R::epochs, &R::set_epochs, "3"),
      Int32("repetitions", kOptional, kAlways, &R::repetitions,
            &R::set_repetitions, "2"),
      Int32("max_retries", kOptional, kAlways, &R::max_retries,
            &R::set_max_retries, "2"),
      {"time_limit", false, ReadTimeLimit,
       WriteIf("time_limit", &R::time_limit_s,
               [](const R& s) { return s.time_limit_s() > 0; }),
       "90m"},
      Text("queue", kOptional, kWhenSet, &R::queue, &R::set_queue, "gpu"),
      {"abort_if_hopeless", false, ReadAbortIfHopeless,
       WriteIf("abort_if_hopeless", &R::abort_if_hopeless,
               [](const R& s) { return s.abort_if_hopeless() > 0; }),
       "0.05"},
      // Written with abort_if_hopeless, whose threshold it delays.
      {"min_epochs", false, ReadInt32("min_epochs", &R::set_min_epochs),
       WriteIf("min_epochs", &R::min_epochs,
               [](const R& s) { return s.abort_if_hopeless() > 0; }),
       "1"},
      FastPath("fused_bn", &R::fused_bn, &R::set_fused_bn),
      FastPath("cuda_graph", &R::cuda_graph, &R::set_cuda_graph),
      FastPath("gpu_decode", &R::gpu_decode, &R::set_gpu_decode),
      // Only another than the default: the text of a spec without the
      // field stays what it was.
      {"launcher", false, ReadText("launcher", &R::set_launcher),
       WriteIf("launcher", &R::launcher,
               [](const R& s) {
                 return !s.launcher().empty() &&
                        s.launcher() != Name(Launcher::kAgent);
               }),
       "mpirun"},
      {"priority", false, ReadPriority,
       WriteIf("priority", &R::priority,
               [](const R& s) { return s.has_priority(); }),
       "5"},
      Text("sweep", kOptional, kWhenSet, &R::sweep, &R::set_sweep, "sweep-1"),
      Text("scaling", kOptional, kWhenSet, &R::scaling, &R::set_scaling,
           "weak"),
      {"constraints", false, ReadConstraints, WriteConstraints, "{rack: 3}"},
  };
}

}  // namespace

const std::vector<SpecField>& SpecFields() {
  static const std::vector<SpecField>* const fields =
      new std::vector<SpecField>(BuildSpecFields());
  return *fields;
}

std::string SpecFieldName(absl::string_view key) {
  return absl::StrCat("field '", key, "'");
}

absl::Status SpecFieldError(absl::string_view key, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(SpecFieldName(key), ": ", why));
}

absl::Status CheckInRange(absl::string_view what, int64_t value, int64_t low,
                          int64_t high) {
  if (value < low || value > high) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": must be between ", low, " and ", high, ", got ", value));
  }
  return absl::OkStatus();
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

}  // namespace hpcai500
