#include "tests/worker/mllog_checker.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace hpcai500::worker::mllog_checker {

namespace {

using nlohmann::json;

constexpr char kToken[] = ":::MLLOG ";

// The cross-line state common.yaml's BEGIN block sets up.
struct State {
  bool init_started = false;
  bool init_stopped = false;
  bool run_started = false;
  bool run_stopped = false;
  double first_init_start = 9e99;
  double compile_time_mins = 0;
  std::string opt_name;
};

enum class Req { kNone, kExactlyOne, kAtLeastOne, kAtLeastOneOr };

// One KEY record of a rule file. `check` returns the text of the first test
// that fails ("" when all pass); `post` updates the state afterwards.
struct KeyRule {
  explicit KeyRule(std::string key, Req requirement = Req::kNone,
                   std::string other = "")
      : name(std::move(key)), req(requirement), alternative(std::move(other)) {}

  std::string name;
  Req req = Req::kNone;
  std::string alternative;  // the other key of AT_LEAST_ONE_OR(...)
  std::function<std::string(const Line&, State&)> check;
  std::function<void(const Line&, State&)> post;
};

bool Has(const json& metadata, const char* key) {
  return metadata.is_object() && metadata.contains(key);
}

// A test of the form "v['value'] OP bound" on a number; a value that is not
// a number makes the Python expression raise, which the checker reports as
// a failed CHECK too.
std::string NumberTest(const Line& line, const std::string& text,
                       const std::function<bool(double)>& test) {
  if (!line.value.is_number()) return text + " (value is not a number)";
  return test(line.value.get<double>()) ? "" : text;
}

std::string InList(const Line& line, const std::set<std::string>& allowed,
                   const std::string& text) {
  return line.value.is_string() && allowed.count(line.value.get<std::string>())
             ? ""
             : text;
}

std::string NotEmpty(const Line& line) {
  return line.value.is_string() && line.value.get<std::string>().empty()
             ? "v['value'] != ''"
             : "";
}

std::string FirstFailure(
    std::initializer_list<std::pair<bool, const char*>> tests) {
  for (const auto& [passes, text] : tests) {
    if (!passes) return text;
  }
  return "";
}

std::string Shown(const json& j) { return j.dump(); }

// Runs `rules` over the log as the Python checker runs one rule file.
Violations RunRules(const Log& log, const std::string& file,
                    const std::vector<KeyRule>& rules) {
  Violations out;
  State s;
  std::map<std::string, const KeyRule*> by_key;
  std::map<std::string, int> count;
  for (const KeyRule& r : rules) {
    by_key[r.name] = &r;
    count[r.name] = 0;
  }
  for (const Line& line : log.lines) {
    auto it = by_key.find(line.key);
    if (it == by_key.end()) continue;  // keys the file does not name
    ++count[line.key];
    const KeyRule& rule = *it->second;
    if (rule.check) {
      const std::string failed = rule.check(line, s);
      if (!failed.empty()) {
        std::ostringstream m;
        m << file << ": CHECK for '" << line.key << "' failed in line "
          << line.lineno << " (value " << Shown(line.value) << ", metadata "
          << Shown(line.metadata) << "): failed test: " << failed;
        out.push_back(m.str());
      }
    }
    if (rule.post) rule.post(line, s);
  }
  for (const KeyRule& r : rules) {
    const int n = count[r.name];
    std::ostringstream m;
    if (r.req == Req::kExactlyOne && n != 1) {
      m << file << ": Required EXACTLY_ONE occurrence of '" << r.name
        << "' but found " << n;
    } else if (r.req == Req::kAtLeastOne && n < 1) {
      m << file << ": Required AT_LEAST_ONE occurrence of '" << r.name
        << "' but found 0";
    } else if (r.req == Req::kAtLeastOneOr && n < 1 &&
               count[r.alternative] < 1) {
      m << file << ": Required AT_LEAST_ONE occurrence of '" << r.name
        << "' or '" << r.alternative << "'";
    }
    if (!m.str().empty()) out.push_back(m.str());
  }
  return out;
}

void Append(Violations& to, const Violations& from) {
  to.insert(to.end(), from.begin(), from.end());
}

// submission_division's POST (common.yaml): the division sets how long
// initialisation may take.
void SetCompileTime(const Line& line, State& s) {
  s.compile_time_mins = line.value == "open" ? 240 : 30;
}

constexpr char kCommon[] = "training_4.0.0/common.yaml";
constexpr char kOpenCommon[] = "training_4.0.0/open_common.yaml";
constexpr char kOpenResnet[] =
    "training_4.0.0/open_resnet.yaml (as closed_resnet.yaml, no target)";
constexpr char kHyperparameters[] = "MLPerf resnet hyperparameter keys";

KeyRule NumberKey(const std::string& name, const std::string& text,
                  std::function<bool(double)> test) {
  KeyRule r{name, Req::kExactlyOne};
  r.check = [text, test](const Line& l, State&) {
    return NumberTest(l, text, test);
  };
  return r;
}

}  // namespace

Log Parse(std::istream& in) {
  Log log;
  int lineno = 0;
  for (std::string raw; std::getline(in, raw);) {
    const size_t at = raw.find(kToken);
    if (at == std::string::npos) continue;
    const std::string body = raw.substr(at + sizeof(kToken) - 1);
    try {
      const json j = json::parse(body);
      Line line;
      line.lineno = lineno;
      line.time_ms = j.at("time_ms").get<double>();
      line.key = j.at("key").get<std::string>();
      line.value = j.at("value");
      line.metadata = j.at("metadata");
      log.lines.push_back(std::move(line));
    } catch (const std::exception& e) {
      log.parse_errors.push_back("line " + std::to_string(lineno) + ": " +
                                 e.what() + ": " + raw);
    }
    ++lineno;
  }
  return log;
}

Log ParseText(const std::string& text) {
  std::istringstream in(text);
  return Parse(in);
}

Violations CheckParsing(const Log& log) {
  Violations out;
  if (log.lines.empty() && log.parse_errors.empty()) {
    out.push_back("No log lines detected");
  }
  for (const std::string& e : log.parse_errors) {
    out.push_back("Log lines had parsing errors: " + e);
  }
  return out;
}

Violations CheckSubmission(const Log& log) {
  std::vector<KeyRule> common;
  for (const char* key : {"submission_org", "submission_platform"}) {
    KeyRule r{key, Req::kExactlyOne};
    r.check = [](const Line& l, State&) { return NotEmpty(l); };
    common.push_back(r);
  }
  KeyRule division{"submission_division", Req::kExactlyOne};
  division.check = [](const Line& l, State&) {
    return InList(l, {"closed", "open"}, "v['value'] in ['closed', 'open']");
  };
  common.push_back(division);
  KeyRule status{"submission_status", Req::kExactlyOne};
  status.check = [](const Line& l, State&) {
    return InList(l, {"cloud", "onprem", "preview", "research"},
                  "v['value'] in ['cloud', 'onprem', 'preview', 'research']");
  };
  common.push_back(status);
  KeyRule cache{"cache_clear", Req::kAtLeastOne};  // 'value' in v: parsed
  common.push_back(cache);
  Violations out = RunRules(log, kCommon, common);

  // We submit to the open division, whose file enqueues open_common.yaml.
  for (const Line& l : log.lines) {
    if (l.key == "submission_division" && l.value != "open") {
      out.push_back(std::string(kCommon) + ": submission_division is " +
                    Shown(l.value) +
                    ", so open_common.yaml (the open division's rules) "
                    "would not be the one applied");
    }
  }
  KeyRule benchmark{"submission_benchmark", Req::kExactlyOne};
  benchmark.check = [](const Line& l, State&) {
    return InList(l,
                  {"resnet", "ssd", "stable_diffusion", "maskrcnn", "gpt3",
                   "dlrm_dcnv2", "bert", "rnnt", "unet3d", "gnn"},
                  "v['value'] in ['resnet', 'ssd', 'stable_diffusion', "
                  "'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', "
                  "'unet3d', 'gnn']");
  };
  Append(out, RunRules(log, kOpenCommon, {benchmark}));
  return out;
}

Violations CheckInitAndRun(const Log& log) {
  std::vector<KeyRule> rules;
  KeyRule division{"submission_division"};  // counted by CheckSubmission
  division.post = SetCompileTime;
  rules.push_back(division);

  KeyRule init_start{"init_start", Req::kAtLeastOne};
  init_start.check = [](const Line&, State& s) {
    return FirstFailure({{!s.init_stopped, "not s['init_stopped']"},
                         {!s.run_started, "not s['run_started']"}});
  };
  init_start.post = [](const Line& l, State& s) {
    s.init_started = true;
    s.first_init_start = std::min(s.first_init_start, l.time_ms);
  };
  rules.push_back(init_start);

  KeyRule init_stop{"init_stop", Req::kExactlyOne};
  init_stop.check = [](const Line& l, State& s) {
    return FirstFailure(
        {{s.init_started, "s['init_started']"},
         {!s.run_started, "not s['run_started']"},
         {l.time_ms - s.first_init_start < s.compile_time_mins * 60 * 1e3,
          "ll.timestamp - s['first_init_start'] < "
          "(s['compile_time_mins']*60*1e3) (compile_time_mins is 0 until "
          "submission_division has been read)"}});
  };
  init_stop.post = [](const Line&, State& s) { s.init_stopped = true; };
  rules.push_back(init_stop);

  KeyRule run_start{"run_start", Req::kExactlyOne};
  run_start.check = [](const Line&, State& s) {
    return FirstFailure({{s.init_stopped, "( s['init_stopped'] == True )"}});
  };
  run_start.post = [](const Line&, State& s) { s.run_started = true; };
  rules.push_back(run_start);

  KeyRule run_stop{"run_stop", Req::kExactlyOne};
  run_stop.check = [](const Line& l, State& s) {
    return FirstFailure(
        {{s.run_started, "s['run_started']"},
         {Has(l.metadata, "status"), "'status' in v['metadata']"}});
  };
  run_stop.post = [](const Line&, State& s) { s.run_stopped = true; };
  rules.push_back(run_stop);
  return RunRules(log, kCommon, rules);
}

Violations CheckBlocksEpochsAndEvals(const Log& log) {
  std::vector<KeyRule> rules;
  KeyRule run_start{"run_start"};  // counted by CheckInitAndRun
  run_start.post = [](const Line&, State& s) { s.run_started = true; };
  rules.push_back(run_start);

  KeyRule block_start{"block_start", Req::kAtLeastOneOr, "epoch_start"};
  block_start.check = [](const Line& l, State& s) {
    const json& m = l.metadata;
    const bool count_positive = Has(m, "epoch_count") &&
                                m["epoch_count"].is_number() &&
                                m["epoch_count"].get<double>() > 0;
    return FirstFailure(
        {{s.run_started, "s['run_started']"},
         {Has(m, "epoch_count"), "'epoch_count' in v['metadata']"},
         {Has(m, "first_epoch_num"), "'first_epoch_num' in v['metadata']"},
         {count_positive, "v['metadata']['epoch_count'] > 0"}});
  };
  rules.push_back(block_start);

  KeyRule block_stop{"block_stop", Req::kAtLeastOneOr, "epoch_stop"};
  block_stop.check = [](const Line& l, State&) {
    return FirstFailure({{Has(l.metadata, "first_epoch_num"),
                          "'first_epoch_num' in v['metadata']"}});
  };
  rules.push_back(block_stop);

  const std::vector<std::pair<std::string, std::pair<std::string, Req>>>
      with_epoch = {{"epoch_start", {"block_start", Req::kAtLeastOneOr}},
                    {"epoch_stop", {"block_stop", Req::kAtLeastOneOr}},
                    {"eval_start", {"block_start", Req::kAtLeastOneOr}},
                    {"eval_stop", {"block_stop", Req::kAtLeastOneOr}},
                    {"eval_accuracy", {"", Req::kAtLeastOne}}};
  for (const auto& [key, req] : with_epoch) {
    KeyRule r{key, req.second, req.first};
    r.check = [](const Line& l, State&) {
      return FirstFailure(
          {{Has(l.metadata, "epoch_num"), "'epoch_num' in v['metadata']"}});
    };
    rules.push_back(r);
  }
  return RunRules(log, kCommon, rules);
}

Violations CheckSampleCounts(const Log& log) {
  std::vector<KeyRule> rules;
  for (const char* key : {"train_samples", "eval_samples"}) {
    KeyRule r{key, Req::kExactlyOne};
    r.check = [](const Line& l, State&) { return NotEmpty(l); };
    rules.push_back(r);
  }
  return RunRules(log, kCommon, rules);
}

Violations CheckResnet(const Log& log) {
  std::vector<KeyRule> resnet;
  resnet.push_back(NumberKey("global_batch_size", "v['value'] > 0",
                             [](double v) { return v > 0; }));
  KeyRule opt_name{"opt_name", Req::kExactlyOne};
  opt_name.check = [](const Line& l, State&) {
    return InList(l, {"sgd", "lars"}, "v['value'] in ['sgd', 'lars']");
  };
  resnet.push_back(opt_name);
  KeyRule accuracy{"eval_accuracy", Req::kAtLeastOne};
  accuracy.check = [](const Line& l, State&) {
    if (!Has(l.metadata, "epoch_num"))
      return std::string("'epoch_num' in v['metadata']");
    return NumberTest(l, "v['value'] >= 0.0 and v['value'] <= 1.0",
                      [](double v) { return v >= 0.0 && v <= 1.0; });
  };
  resnet.push_back(accuracy);
  Violations out = RunRules(log, kOpenResnet, resnet);

  auto positive = [](double v) { return v > 0; };
  auto non_negative = [](double v) { return v >= 0; };
  std::vector<KeyRule> hyper = {
      NumberKey("opt_base_learning_rate", "v['value'] > 0", positive),
      NumberKey("opt_learning_rate_warmup_epochs", "v['value'] >= 0",
                non_negative),
      NumberKey("opt_momentum", "v['value'] >= 0", non_negative),
      NumberKey("opt_weight_decay", "v['value'] >= 0", non_negative),
      NumberKey("label_smoothing", "0 <= v['value'] < 1",
                [](double v) { return v >= 0 && v < 1; }),
      NumberKey("gradient_accumulation_steps", "v['value'] > 0", positive)};
  bool lars = false;
  for (const Line& l : log.lines) {
    if (l.key == "opt_name" && l.value == "lars") lars = true;
  }
  if (lars) {
    hyper.push_back(
        NumberKey("lars_opt_base_learning_rate", "v['value'] > 0", positive));
    hyper.push_back(NumberKey("lars_opt_end_learning_rate", "v['value'] >= 0",
                              non_negative));
    hyper.push_back(NumberKey("lars_opt_learning_rate_warmup_epochs",
                              "v['value'] >= 0", non_negative));
    hyper.push_back(NumberKey("lars_opt_momentum", "v['value'] > 0", positive));
    hyper.push_back(
        NumberKey("lars_opt_weight_decay", "v['value'] > 0", positive));
    hyper.push_back(NumberKey("lars_epsilon", "v['value'] >= 0", non_negative));
    hyper.push_back(
        NumberKey("lars_opt_trust_coefficient", "v['value'] > 0", positive));
  }
  Append(out, RunRules(log, kHyperparameters, hyper));
  return out;
}

Violations CheckAll(const Log& log) {
  Violations out = CheckParsing(log);
  Append(out, CheckSubmission(log));
  Append(out, CheckInitAndRun(log));
  Append(out, CheckBlocksEpochsAndEvals(log));
  Append(out, CheckSampleCounts(log));
  Append(out, CheckResnet(log));
  return out;
}

}  // namespace hpcai500::worker::mllog_checker
