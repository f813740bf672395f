#include "common/worker_args.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/fast_paths.h"
#include "common/limits.h"
#include "common/numbers.h"

namespace hpcai500 {
namespace {

// How a flag's text becomes its field.
enum class Kind {
  kRequired,     // std::string, any text
  kInt,          // integer in [low, high]
  kNumber,       // decimal number in (low, high]
  kBool,         // true|1|false|0; may stand alone (true)
  kPath,         // non-empty text
  kText,         // any text
  kPrecision,    // one of the Precision names
  kDevice,       // one of the Device names
  kCompression,  // one of the Compression names
  kDistBackend,  // one of the DistBackend names
  kSubmission,   // org=ORG,platform=PLATFORM[,status=STATUS]
};

using Member = std::variant<
    std::string WorkerArgs::*, std::optional<std::string> WorkerArgs::*,
    std::optional<int64_t> WorkerArgs::*, std::optional<double> WorkerArgs::*,
    std::optional<bool> WorkerArgs::*, std::optional<Precision> WorkerArgs::*,
    std::optional<Device> WorkerArgs::*,
    std::optional<Compression> WorkerArgs::*,
    std::optional<DistBackend> WorkerArgs::*,
    std::optional<MllogSubmission> WorkerArgs::*>;

struct Flag {
  const char* name;  // without "--"
  Member member;
  Kind kind;
  int64_t low;  // kInt, kNumber
  int64_t high;
  // The text FillDefaults() sets when the flag is absent; nullptr: none.
  const char* fallback;
  // Usage(): the value after the flag (an enum kind's names come first) and
  // a note for the parentheses.
  const char* value;
  const char* note;
};

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kMaxRunId = int64_t{1} << 62;
// The largest attempt number agent/attempts/attempt_layout.h names.
constexpr int64_t kMaxAttemptNumber = 1000000;
constexpr int64_t kWeekSeconds = 7 * 86400;

// Every worker flag. ToArgv and Usage write them in this order.
const Flag kFlags[] = {
    {"workload", &WorkerArgs::workload, Kind::kRequired, 0, 0, nullptr, "W",
     ""},
    {"config", &WorkerArgs::config, Kind::kRequired, 0, 0, nullptr, "C", ""},
    {"epochs", &WorkerArgs::epochs, Kind::kInt, 1, kMaxEpochs, nullptr, "N",
     ""},
    {"batch-size", &WorkerArgs::batch_size, Kind::kInt, 1, kMaxBatchSize,
     nullptr, "N", "per rank"},
    {"precision", &WorkerArgs::precision, Kind::kPrecision, 0, 0, "fp32", "",
     ""},
    {"compression", &WorkerArgs::compression, Kind::kCompression, 0, 0, "none",
     "", ""},
    {"device", &WorkerArgs::device, Kind::kDevice, 0, 0, "cpu", "", ""},
    {"dist-backend", &WorkerArgs::dist_backend, Kind::kDistBackend, 0, 0,
     nullptr, "", "default: nccl on cuda, gloo on cpu"},
    {"seed", &WorkerArgs::seed, Kind::kInt, 0, kMaxWorkerSeed, "42", "N", ""},
    {"events-file", &WorkerArgs::events_file, Kind::kPath, 0, 0, nullptr,
     "PATH", "default: stdout only"},
    {"threads", &WorkerArgs::threads, Kind::kInt, 1, kMaxThreads, nullptr, "N",
     "default: the node's threads over its local ranks"},
    {"data", &WorkerArgs::data, Kind::kPath, 0, 0, nullptr, "DIR|synthetic",
     ""},
    {"steps-per-epoch", &WorkerArgs::steps_per_epoch, Kind::kInt, 1, kIntMax,
     nullptr, "N", "default: the whole shard"},
    {"powersgd-rank", &WorkerArgs::powersgd_rank, Kind::kInt, 1, 1024, "1", "N",
     ""},
    {"powersgd-warmup-steps", &WorkerArgs::powersgd_warmup_steps, Kind::kInt, 0,
     1000000, "100", "N", "uncompressed first"},
    {"bucket-mb", &WorkerArgs::bucket_mb, Kind::kNumber, 0, 65536, "25", "MB",
     ""},
    {"deterministic", &WorkerArgs::deterministic, Kind::kBool, 0, 0, "false",
     "", ""},
    {"fused-bn", &WorkerArgs::fused_bn, Kind::kBool, 0, 0, "false", "",
     "needs --device cuda"},
    {"cuda-graph", &WorkerArgs::cuda_graph, Kind::kBool, 0, 0, "false", "",
     "needs --device cuda and NCCL; no powersgd"},
    {"gpu-decode", &WorkerArgs::gpu_decode, Kind::kBool, 0, 0, "false", "",
     "needs --device cuda"},
    {"checkpoint-dir", &WorkerArgs::checkpoint_dir, Kind::kPath, 0, 0, nullptr,
     "DIR", ""},
    {"resume", &WorkerArgs::resume, Kind::kBool, 0, 0, "false", "",
     "needs --checkpoint-dir"},
    {"watchdog-seconds", &WorkerArgs::watchdog_seconds, Kind::kInt, 0,
     kWeekSeconds, "300", "N", "0: off"},
    {"collective-timeout-seconds", &WorkerArgs::collective_timeout_seconds,
     Kind::kInt, 1, kWeekSeconds, "180", "N", ""},
    {"lease-file", &WorkerArgs::lease_file, Kind::kPath, 0, 0, nullptr, "PATH",
     "stop once its deadline passed; default: no lease"},
    {"run-id", &WorkerArgs::run_id, Kind::kInt, 1, kMaxRunId, nullptr, "N",
     "named in each checkpoint's manifest"},
    {"attempt", &WorkerArgs::attempt, Kind::kInt, 1, kMaxAttemptNumber, nullptr,
     "N", "named in each checkpoint's manifest"},
    {"model", &WorkerArgs::model, Kind::kText, 0, 0, nullptr, "NAME",
     "default: the config's"},
    {"mllog-submission", &WorkerArgs::mllog_submission, Kind::kSubmission, 0, 0,
     nullptr, "org=ORG,platform=PLATFORM[,status=S]", ""},
};

const Flag* FindFlag(const std::string& name) {
  for (const Flag& flag : kFlags) {
    if (name == flag.name) return &flag;
  }
  return nullptr;
}

// The field of `args` that `flag` names, typed T (the table's invariant).
template <typename T>
T& FieldOf(const Flag& flag, WorkerArgs& args) {
  return args.*std::get<T WorkerArgs::*>(flag.member);
}
template <typename T>
const T& FieldOf(const Flag& flag, const WorkerArgs& args) {
  return args.*std::get<T WorkerArgs::*>(flag.member);
}

std::string Quoted(const Flag& flag, const std::string& text) {
  return std::string("--") + flag.name + ": '" + text + "'";
}

bool ParseNumber(const Flag& flag, const std::string& text, double* out,
                 std::string* error) {
  std::optional<double> v = ParseNumberAbove(text, flag.low, flag.high);
  if (!v) {
    *error = Quoted(flag, text) + " is not a number in (" +
             std::to_string(flag.low) + ", " + std::to_string(flag.high) + "]";
    return false;
  }
  *out = *v;
  return true;
}

bool ParseBool(const Flag& flag, const std::string& text, bool* out,
               std::string* error) {
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    *error = Quoted(flag, text) + " is not true or false";
    return false;
  }
  return true;
}

template <typename Enum>
bool ParseEnum(const Flag& flag, const std::string& text,
               std::optional<Enum>* out, std::string* error) {
  *out = Parse<Enum>(text);
  if (!*out) *error = Quoted(flag, text) + " is not " + NamesInProse<Enum>();
  return out->has_value();
}

bool IsSubmissionStatus(const std::string& status) {
  return status == "onprem" || status == "cloud" || status == "preview" ||
         status == "research";
}

// Parses "org=ORG,platform=PLATFORM[,status=STATUS]".
bool ParseSubmission(const std::string& text, MllogSubmission* out,
                     std::string* error) {
  MllogSubmission s;
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
      s.org = value;
    } else if (key == "platform") {
      s.platform = value;
    } else if (key == "status" && IsSubmissionStatus(value)) {
      s.status = value;
    } else if (key == "status") {
      *error = "--mllog-submission: status '" + value +
               "' is not onprem, cloud, preview or research";
      return false;
    } else {
      *error = "--mllog-submission: unknown key '" + key +
               "' (org, platform, status)";
      return false;
    }
  }
  if (s.org.empty() || s.platform.empty()) {
    *error = "--mllog-submission needs org=... and platform=...";
    return false;
  }
  *out = std::move(s);
  return true;
}

// Sets the field of `flag` in *args from `text`; false with *error naming
// the flag when the text breaks the flag's rule.
bool SetField(const Flag& flag, const std::string& text, WorkerArgs* args,
              std::string* error) {
  switch (flag.kind) {
    case Kind::kRequired:
      FieldOf<std::string>(flag, *args) = text;
      return true;
    case Kind::kPath:
      if (text.empty()) {
        *error = std::string("--") + flag.name + ": empty path";
        return false;
      }
      FieldOf<std::optional<std::string>>(flag, *args) = text;
      return true;
    case Kind::kText:
      FieldOf<std::optional<std::string>>(flag, *args) = text;
      return true;
    case Kind::kInt: {
      int64_t v = 0;
      if (!ReadInt(std::string("--") + flag.name, text, flag.low, flag.high, &v,
                   error)) {
        return false;
      }
      FieldOf<std::optional<int64_t>>(flag, *args) = v;
      return true;
    }
    case Kind::kNumber: {
      double v = 0;
      if (!ParseNumber(flag, text, &v, error)) return false;
      FieldOf<std::optional<double>>(flag, *args) = v;
      return true;
    }
    case Kind::kBool: {
      bool v = false;
      if (!ParseBool(flag, text, &v, error)) return false;
      FieldOf<std::optional<bool>>(flag, *args) = v;
      return true;
    }
    case Kind::kPrecision:
      return ParseEnum(flag, text,
                       &FieldOf<std::optional<Precision>>(flag, *args), error);
    case Kind::kDevice:
      return ParseEnum(flag, text, &FieldOf<std::optional<Device>>(flag, *args),
                       error);
    case Kind::kCompression:
      return ParseEnum(
          flag, text, &FieldOf<std::optional<Compression>>(flag, *args), error);
    case Kind::kDistBackend:
      return ParseEnum(
          flag, text, &FieldOf<std::optional<DistBackend>>(flag, *args), error);
    case Kind::kSubmission: {
      MllogSubmission s;
      if (!ParseSubmission(text, &s, error)) return false;
      FieldOf<std::optional<MllogSubmission>>(flag, *args) = std::move(s);
      return true;
    }
  }
  return false;
}

// The shortest decimal text that strtod reads back as `v` exactly.
std::string FormatNumber(double v) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  return text;
}

// The value text of the field of `flag`, or nullopt when it is unset.
std::optional<std::string> FieldText(const Flag& flag, const WorkerArgs& args) {
  return std::visit(
      [&](auto member) -> std::optional<std::string> {
        const auto& field = args.*member;
        using Field = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<Field, std::string>) {
          return field;
        } else {
          if (!field) return std::nullopt;
          using T = typename Field::value_type;
          if constexpr (std::is_same_v<T, std::string>) {
            return *field;
          } else if constexpr (std::is_same_v<T, int64_t>) {
            return std::to_string(*field);
          } else if constexpr (std::is_same_v<T, double>) {
            return FormatNumber(*field);
          } else if constexpr (std::is_same_v<T, bool>) {
            return *field ? "true" : "false";
          } else if constexpr (std::is_same_v<T, MllogSubmission>) {
            return "org=" + field->org + ",platform=" + field->platform +
                   ",status=" + field->status;
          } else {
            return std::string(Name(*field));
          }
        }
      },
      flag.member);
}

bool FieldsEqual(const Flag& flag, const WorkerArgs& a, const WorkerArgs& b) {
  return std::visit([&](auto member) { return a.*member == b.*member; },
                    flag.member);
}

// Splits argv into flag name -> value text (the last one given).
ArgvOutcome SplitFlags(const std::vector<std::string>& args,
                       std::map<const Flag*, std::string>* values,
                       std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") return ArgvOutcome::kHelp;
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "'";
      return ArgvOutcome::kError;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const Flag* flag = FindFlag(name);
    if (!value && flag != nullptr && flag->kind == Kind::kBool) {
      value = "true";
    } else if (!value && i + 1 < args.size()) {
      value = args[++i];
    } else if (!value) {
      *error = "flag --" + name + " needs a value";
      return ArgvOutcome::kError;
    }
    if (flag == nullptr) {
      *error = "unknown flag --" + name;
      return ArgvOutcome::kError;
    }
    (*values)[flag] = *value;
  }
  return ArgvOutcome::kArgs;
}

// The value type of an optional field; void for the required strings.
template <typename Field>
struct ValueOf {
  using type = void;
};
template <typename T>
struct ValueOf<std::optional<T>> {
  using type = T;
};

// The values --`flag` takes in Usage(): an enum field's names joined by '|'
// (then the row's value), or the row's value.
std::string UsageValue(const Flag& flag) {
  std::string names = std::visit(
      [](auto member) -> std::string {
        using Field = std::decay_t<decltype(WorkerArgs().*member)>;
        using T = typename ValueOf<Field>::type;
        if constexpr (std::is_enum_v<T>) {
          return JoinNames<T>("|");
        } else {
          return "";
        }
      },
      flag.member);
  if (!names.empty() && *flag.value != '\0') names += ' ';
  return names + flag.value;
}

// "--flag VALUE (note, default D)", in brackets unless required.
std::string UsageItem(const Flag& flag) {
  std::string item = std::string("--") + flag.name;
  if (std::string value = UsageValue(flag); !value.empty()) {
    item += " " + value;
  }
  std::string notes = flag.note;
  if (flag.fallback != nullptr && flag.kind != Kind::kBool) {
    if (!notes.empty()) notes += ", ";
    notes += std::string("default ") + flag.fallback;
  }
  if (!notes.empty()) item += " (" + notes + ")";
  return flag.kind == Kind::kRequired ? item : "[" + item + "]";
}

// "--cuda-graph" for cuda_graph.
std::string FastPathFlag(const FastPathInfo& info) {
  std::string flag = "--" + std::string(info.name);
  for (char& c : flag) {
    if (c == '_') c = '-';
  }
  return flag;
}

}  // namespace

bool MllogSubmission::operator==(const MllogSubmission& other) const {
  return org == other.org && platform == other.platform &&
         status == other.status;
}

std::vector<std::string> WorkerArgs::ToArgv() const {
  std::vector<std::string> argv;
  for (const Flag& flag : kFlags) {
    std::optional<std::string> text = FieldText(flag, *this);
    if (!text) continue;
    argv.push_back(std::string("--") + flag.name);
    if (flag.kind == Kind::kBool && *text == "true") continue;
    if (flag.kind == Kind::kBool) {
      argv.back() += "=" + *text;  // "--resume false" would read as true
    } else {
      argv.push_back(std::move(*text));
    }
  }
  return argv;
}

ArgvOutcome WorkerArgs::FromArgv(const std::vector<std::string>& args,
                                 WorkerArgs* out, std::string* error) {
  std::map<const Flag*, std::string> values;
  if (ArgvOutcome split = SplitFlags(args, &values, error);
      split != ArgvOutcome::kArgs) {
    return split;
  }
  const Flag* workload = FindFlag("workload");
  const Flag* config = FindFlag("config");
  if (!values.count(workload) || !values.count(config)) {
    *error = "--workload and --config are required";
    return ArgvOutcome::kError;
  }
  WorkerArgs parsed;
  for (const Flag& flag : kFlags) {
    auto value = values.find(&flag);
    if (value != values.end() &&
        !SetField(flag, value->second, &parsed, error)) {
      return ArgvOutcome::kError;
    }
  }
  if (parsed.resume.value_or(false) && !parsed.checkpoint_dir) {
    *error = "--resume needs --checkpoint-dir";
    return ArgvOutcome::kError;
  }
  for (const FastPathInfo& info : kFastPaths) {
    if (FastPathOn(parsed, info.path) &&
        parsed.device.value_or(Device::kCpu) != Device::kCuda) {
      *error = FastPathFlag(info) + " needs --device cuda";
      return ArgvOutcome::kError;
    }
  }
  *out = std::move(parsed);
  return ArgvOutcome::kArgs;
}

std::vector<std::string> WorkerArgs::FlagNames() {
  std::vector<std::string> names;
  for (const Flag& flag : kFlags) names.push_back(flag.name);
  return names;
}

bool WorkerArgs::Set(const std::string& flag, const std::string& text,
                     std::string* error) {
  const Flag* found = FindFlag(flag);
  if (found == nullptr) {
    *error = "unknown flag --" + flag;
    return false;
  }
  return SetField(*found, text, this, error);
}

void WorkerArgs::FillDefaults() {
  for (const Flag& flag : kFlags) {
    if (flag.fallback == nullptr || FieldText(flag, *this)) continue;
    std::string error;
    const bool set = SetField(flag, flag.fallback, this, &error);
    assert(set && "a default breaks its own flag's rule");
    (void)set;
  }
}

WorkerArgs WorkerArgs::Defaults() {
  WorkerArgs args;
  args.FillDefaults();
  return args;
}

std::string WorkerArgs::Usage(const std::string& program) {
  constexpr size_t kWidth = 80;
  const std::string indent(9, ' ');
  std::string text = "usage: " + program;
  size_t line_start = 0;
  for (const Flag& flag : kFlags) {
    const std::string item = UsageItem(flag);
    if (text.size() - line_start + 1 + item.size() > kWidth) {
      text += "\n";
      line_start = text.size();
      text += indent + item;
    } else {
      text += " " + item;
    }
  }
  return text + "\n";
}

bool WorkerArgs::operator==(const WorkerArgs& other) const {
  for (const Flag& flag : kFlags) {
    if (!FieldsEqual(flag, *this, other)) return false;
  }
  return true;
}

std::string CheckpointFileName(int64_t epoch) {
  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-epoch-%06lld.pt",
                static_cast<long long>(epoch));
  return name;
}

bool FastPathOn(const WorkerArgs& args, FastPath path) {
  switch (path) {
    case FastPath::kFusedBn:
      return args.fused_bn.value_or(false);
    case FastPath::kCudaGraph:
      return args.cuda_graph.value_or(false);
    case FastPath::kGpuDecode:
      return args.gpu_decode.value_or(false);
  }
  return false;
}

std::string EnabledFastPaths(const WorkerArgs& args) {
  std::string joined;
  for (const std::string& name : FastPathNames(
           [&args](FastPath path) { return FastPathOn(args, path); })) {
    joined += (joined.empty() ? "" : ",") + name;
  }
  return joined;
}

}  // namespace hpcai500
