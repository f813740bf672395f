#include "methodology/registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "common/fast_paths.h"

namespace hpcai500 {

extern const char kRegistryText[];  // generated from methodology/registry.ini

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// A finite number: strtod also reads "nan" and "inf", which no rule
// (target > 0) would then refuse.
bool ParseDouble(std::string_view s, double* out) {
  std::string copy(s);
  char* end = nullptr;
  *out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size() &&
         std::isfinite(*out);
}

bool ParseInt(std::string_view s, int64_t* out) {
  std::string copy(s);
  char* end = nullptr;
  *out = std::strtoll(copy.c_str(), &end, 10);
  return !copy.empty() && end == copy.c_str() + copy.size();
}

bool ParseBool(std::string_view s, bool* out) {
  if (s == "true") {
    *out = true;
    return true;
  }
  if (s == "false") {
    *out = false;
    return true;
  }
  return false;
}

// Sets one key of a workload section; returns an error message or "".
std::string SetWorkloadKey(WorkloadInfo& w, std::string_view key,
                           std::string_view value) {
  if (key == "title") {
    w.title = value;
  } else if (key == "metric") {
    w.metric = value;
  } else if (key == "exponent") {
    if (!ParseDouble(value, &w.exponent)) return "exponent is not a number";
  } else {
    return "unknown workload key '" + std::string(key) + "'";
  }
  return "";
}

const std::string kYears = "is not a list of years (e.g. 1979 1980)";

// The items of a list written with spaces, tabs or commas between them.
std::vector<std::string_view> ListItems(std::string_view s) {
  std::vector<std::string_view> items;
  size_t pos = 0;
  while (pos < s.size()) {
    if (s[pos] == ' ' || s[pos] == ',' || s[pos] == '\t') {
      ++pos;
      continue;
    }
    size_t end = s.find_first_of(" ,\t", pos);
    if (end == std::string_view::npos) end = s.size();
    items.push_back(s.substr(pos, end - pos));
    pos = end;
  }
  return items;
}

// "1979 1980 ..." (spaces or commas between), each in 1000..9999.
bool ParseYears(std::string_view s, std::vector<int>* out) {
  out->clear();
  for (std::string_view item : ListItems(s)) {
    int64_t year = 0;
    if (!ParseInt(item, &year) || year < 1000 || year > 9999) return false;
    out->push_back(static_cast<int>(year));
  }
  return !out->empty();
}

// "fused_bn, cuda_graph": names of kFastPaths, each once.
std::string ParseFastPaths(std::string_view s, std::vector<std::string>* out) {
  out->clear();
  for (std::string_view item : ListItems(s)) {
    const bool known = std::any_of(
        kFastPaths.begin(), kFastPaths.end(),
        [&](const FastPathInfo& info) { return info.name == item; });
    if (!known)
      return "fast_paths: '" + std::string(item) + "' is no fast path";
    if (std::find(out->begin(), out->end(), item) != out->end()) {
      return "fast_paths: '" + std::string(item) + "' twice";
    }
    out->emplace_back(item);
  }
  return "";
}

// "HEIGHTxWIDTH", both positive.
bool ParseGrid(std::string_view s, int64_t* height, int64_t* width) {
  const size_t x = s.find('x');
  if (x == std::string_view::npos) return false;
  return ParseInt(s.substr(0, x), height) && ParseInt(s.substr(x + 1), width) &&
         *height > 0 && *width > 0;
}

std::string SetConfigKey(ConfigInfo& c, std::string_view key,
                         std::string_view value) {
  auto number = [&](double* out) -> std::string {
    return ParseDouble(value, out) ? "" : std::string(key) + " is not a number";
  };
  auto integer = [&](auto* out) -> std::string {
    int64_t v = 0;
    if (!ParseInt(value, &v)) return std::string(key) + " is not an integer";
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(v);
    return "";
  };
  auto boolean = [&](bool* out) -> std::string {
    return ParseBool(value, out) ? ""
                                 : std::string(key) + " is not true or false";
  };
  if (key == "model")
    c.model = value;
  else if (key == "dataset")
    c.dataset = value;
  else if (key == "data_dir")
    c.data_dir = value;
  else if (key == "optimizer")
    c.optimizer = value;
  else if (key == "target")
    return number(&c.target);
  else if (key == "lr")
    return number(&c.lr);
  else if (key == "momentum")
    return number(&c.momentum);
  else if (key == "weight_decay")
    return number(&c.weight_decay);
  else if (key == "label_smoothing")
    return number(&c.label_smoothing);
  else if (key == "epochs")
    return integer(&c.epochs);
  else if (key == "batch_size")
    return integer(&c.batch_size);
  else if (key == "warmup_epochs")
    return integer(&c.warmup_epochs);
  else if (key == "train_samples")
    return integer(&c.train_samples);
  else if (key == "eval_samples")
    return integer(&c.eval_samples);
  else if (key == "real_data")
    return boolean(&c.real_data);
  else if (key == "implemented")
    return boolean(&c.implemented);
  else if (key == "train_years")
    return ParseYears(value, &c.train_years) ? "" : "train_years " + kYears;
  else if (key == "eval_years")
    return ParseYears(value, &c.eval_years) ? "" : "eval_years " + kYears;
  else if (key == "generate_samples")
    return integer(&c.generate_samples);
  else if (key == "rois_per_image")
    return integer(&c.rois_per_image);
  else if (key == "box_head_width")
    return integer(&c.box_head_width);
  else if (key == "fast_paths")
    return ParseFastPaths(value, &c.fast_paths);
  else if (key == "generate_grid")
    return ParseGrid(value, &c.generate_height, &c.generate_width)
               ? ""
               : "generate_grid is not HEIGHTxWIDTH (e.g. 96x144)";
  else
    return "unknown config key '" + std::string(key) + "'";
  return "";
}

// "3, 4, 3.5 ..." (commas or spaces between), each a positive number.
bool ParseEpochList(std::string_view s, std::vector<double>* out) {
  out->clear();
  for (std::string_view item : ListItems(s)) {
    double epochs = 0;
    if (!ParseDouble(item, &epochs) || epochs <= 0) return false;
    out->push_back(epochs);
  }
  return !out->empty();
}

std::string SetReferenceKey(ReferenceConvergence& r, std::string_view key,
                            std::string_view value) {
  if (key == "global_batch") {
    return ParseInt(value, &r.global_batch) && r.global_batch > 0
               ? ""
               : "global_batch is not a positive integer";
  }
  if (key == "epochs_to_target") {
    return ParseEpochList(value, &r.epochs)
               ? ""
               : "epochs_to_target is not a list of positive numbers";
  }
  if (key == "made_by") {
    r.made_by = value;
    return "";
  }
  return "unknown rcp key '" + std::string(key) + "'";
}

// The rules every reference point keeps: "" or the first broken one.
std::string CheckReferences(const std::vector<ReferenceConvergence>& refs) {
  for (size_t i = 0; i < refs.size(); ++i) {
    const ReferenceConvergence& r = refs[i];
    const std::string name = "rcp " + r.workload + "/" + r.config;
    if (r.global_batch <= 0 || r.epochs.size() < 3 || r.made_by.empty()) {
      return name +
             ": needs global_batch, made_by and at least 3 epochs_to_target "
             "(the check drops the fastest and the slowest)";
    }
    for (size_t j = 0; j < i; ++j) {
      if (refs[j].workload == r.workload && refs[j].config == r.config &&
          refs[j].global_batch == r.global_batch) {
        return name + ": two points for global_batch " +
               std::to_string(r.global_batch);
      }
    }
  }
  return "";
}

// The rules a config must keep once all its keys are read: "" when it
// keeps them, else the first broken one naming the config.
std::string CheckConfigs(const std::vector<ConfigInfo>& configs) {
  for (const ConfigInfo& c : configs) {
    if (c.epochs <= 0 || c.batch_size <= 0) {
      return "config " + c.workload + "/" + c.name +
             ": epochs and batch_size must be positive";
    }
    // A noop config trains nothing, so it has nothing to reach.
    const bool noop = c.workload == kNoopWorkload;
    if (noop ? c.target != 0 : c.target <= 0) {
      return "config " + c.workload + "/" + c.name + ": target must be " +
             (noop ? "0 (a noop trains nothing)" : "positive");
    }
    if (c.dataset == "extreme_weather" &&
        (c.train_years.empty() || c.eval_years.empty())) {
      return "config " + c.workload + "/" + c.name +
             ": dataset extreme_weather needs train_years and eval_years";
    }
    if (c.rois_per_image < 0 || c.box_head_width < 0) {
      return "config " + c.workload + "/" + c.name +
             ": rois_per_image and box_head_width must not be negative";
    }
    if (c.generate_samples < 0 ||
        (c.generate_samples > 0 && c.generate_height == 0)) {
      return "config " + c.workload + "/" + c.name +
             ": generate_samples needs a positive count and generate_grid";
    }
  }
  return "";
}

}  // namespace

std::optional<Registry> Registry::Parse(std::string_view text,
                                        std::string* error) {
  Registry reg;
  enum class Section {
    kNone,
    kWorkload,
    kConfig,
    kReference
  } section = Section::kNone;
  int lineno = 0;
  auto fail = [&](const std::string& why) {
    *error = "registry line " + std::to_string(lineno) + ": " + why;
    return std::nullopt;
  };
  while (!text.empty()) {
    ++lineno;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = Trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return fail("unterminated section header");
      std::string_view header = Trim(line.substr(1, line.size() - 2));
      if (header.rfind("workload ", 0) == 0) {
        WorkloadInfo w;
        w.name = Trim(header.substr(9));
        if (reg.FindWorkload(w.name)) return fail("duplicate workload");
        reg.workloads_.push_back(w);
        section = Section::kWorkload;
      } else if (header.rfind("config ", 0) == 0) {
        std::string_view full = Trim(header.substr(7));
        size_t slash = full.find('/');
        if (slash == std::string_view::npos) {
          return fail("config header must be [config WORKLOAD/NAME]");
        }
        ConfigInfo c;
        c.workload = full.substr(0, slash);
        c.name = full.substr(slash + 1);
        if (!reg.FindWorkload(c.workload)) {
          return fail("config of undeclared workload '" + c.workload + "'");
        }
        if (reg.FindConfig(c.workload, c.name)) return fail("duplicate config");
        reg.configs_.push_back(c);
        section = Section::kConfig;
      } else if (header.rfind("rcp ", 0) == 0) {
        std::string_view full = Trim(header.substr(4));
        const size_t slash = full.find('/');
        ReferenceConvergence r;
        if (slash != std::string_view::npos) {
          r.workload = full.substr(0, slash);
          r.config = full.substr(slash + 1);
        }
        if (!reg.FindConfig(r.workload, r.config)) {
          return fail(
              "rcp header must be [rcp WORKLOAD/CONFIG] of a config "
              "declared above");
        }
        reg.references_.push_back(r);
        section = Section::kReference;
      } else {
        return fail("unknown section '" + std::string(header) + "'");
      }
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return fail("expected key = value");
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    std::string why;
    switch (section) {
      case Section::kNone:
        return fail("key outside a section");
      case Section::kWorkload:
        why = SetWorkloadKey(reg.workloads_.back(), key, value);
        break;
      case Section::kConfig:
        why = SetConfigKey(reg.configs_.back(), key, value);
        break;
      case Section::kReference:
        why = SetReferenceKey(reg.references_.back(), key, value);
        break;
    }
    if (!why.empty()) return fail(why);
  }
  if (std::string why = CheckConfigs(reg.configs_); !why.empty()) {
    *error = why;
    return std::nullopt;
  }
  if (std::string why = CheckReferences(reg.references_); !why.empty()) {
    *error = why;
    return std::nullopt;
  }
  return reg;
}

std::string_view Registry::BuiltinText() { return kRegistryText; }

const Registry& Registry::Builtin() {
  static const Registry* const kBuiltin = [] {
    std::string error;
    std::optional<Registry> reg = Parse(kRegistryText, &error);
    if (!reg) {
      std::fprintf(stderr, "built-in registry: %s\n", error.c_str());
      std::abort();
    }
    return new Registry(std::move(*reg));
  }();
  return *kBuiltin;
}

const WorkloadInfo* Registry::FindWorkload(std::string_view name) const {
  for (const WorkloadInfo& w : workloads_) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

const ConfigInfo* Registry::FindConfig(std::string_view workload,
                                       std::string_view config) const {
  for (const ConfigInfo& c : configs_) {
    if (c.workload == workload && c.name == config) return &c;
  }
  return nullptr;
}

std::vector<ReferenceConvergence> Registry::References(
    std::string_view workload, std::string_view config) const {
  std::vector<ReferenceConvergence> found;
  for (const ReferenceConvergence& r : references_) {
    if (r.workload == workload && r.config == config) found.push_back(r);
  }
  std::sort(found.begin(), found.end(),
            [](const ReferenceConvergence& a, const ReferenceConvergence& b) {
              return a.global_batch < b.global_batch;
            });
  return found;
}

int ReferenceBatchSize(const ConfigInfo& config, Precision precision) {
  return IsMixedPrecision(precision) ? 2 * config.batch_size
                                     : config.batch_size;
}

int DefaultBatchSize(const ConfigInfo& config, Precision precision) {
  return config.dataset == "imagenet" ? ReferenceBatchSize(config, precision)
                                      : config.batch_size;
}

}  // namespace hpcai500
