#include "cli/cli.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "common/run_state.h"

namespace hpcai500 {
namespace {

// Specs are a screenful of YAML; anything far bigger is a wrong file.
constexpr size_t kMaxFileBytes = 1 << 20;
// The most runs the coordinator lists for one request; `list` pages.
constexpr int kMaxListLimit = 10'000;

struct FlagInfo {
  bool takes_value;
  // Commands that accept the flag; empty for the global flags.
  std::set<std::string> commands;
  bool repeatable = false;
};

const std::map<std::string, FlagInfo>& Flags() {
  static const auto* const kFlags = new std::map<std::string, FlagInfo>{
      {"coordinator", {true, {}}},
      {"token-file", {true, {}}},
      {"help", {false, {}}},
      {"wait", {false, {"submit"}}},
      {"json", {false, {"show", "leaderboard", "regress"}}},
      {"workload", {true, {"leaderboard", "list"}}},
      {"config", {true, {"leaderboard", "list"}}},
      {"name", {true, {"list"}}},
      {"state", {true, {"list"}}},
      {"limit", {true, {"list"}}},
      {"window", {true, {"regress"}}},
      {"baseline", {true, {"regress"}}},
      {"reference", {true, {"regress"}, /*repeatable=*/true}},
      {"tolerance", {true, {"regress"}}},
      {"metric", {true, {"regress"}, /*repeatable=*/true}},
      {"junit", {true, {"regress"}}},
  };
  return *kFlags;
}

// Positional arguments each command takes, and what they are called.
const std::map<std::string, std::vector<std::string>>& CommandArgs() {
  static const auto* const kCommands =
      new std::map<std::string, std::vector<std::string>>{
          {"submit", {"SPEC"}}, {"watch", {"RUN"}},  {"list", {}},
          {"show", {"RUN"}},    {"cancel", {"RUN"}}, {"nodes", {}},
          {"leaderboard", {}},  {"help", {}},        {"regress", {"SPEC"}},
      };
  return *kCommands;
}

absl::StatusOr<int64_t> ParseRunIdArg(const std::string& text) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0 || text.front() == '+' ||
      absl::ascii_isspace(text.front())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a run id (a positive integer), got '", text, "'"));
  }
  return id;
}

absl::Status SetFlag(CliArgs& parsed, const std::string& name,
                     const std::string& value) {
  if (name == "coordinator") {
    if (value.empty()) {
      return absl::InvalidArgumentError(
          "--coordinator needs HOST:PORT, got an empty value");
    }
    parsed.coordinator = value;
  } else if (name == "token-file") {
    parsed.token_file = value;
  } else if (name == "help") {
    parsed.help = true;
  } else if (name == "wait") {
    parsed.wait = true;
  } else if (name == "json") {
    parsed.json = true;
  } else if (name == "workload") {
    parsed.workload = value;
  } else if (name == "config") {
    parsed.config = value;
  } else if (name == "name") {
    parsed.name = value;
  } else if (name == "state") {
    absl::StatusOr<v1::RunState> state = ParseRunStateName(value);
    if (!state.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--state: ", state.status().message()));
    }
    parsed.state = *state;
  } else if (name == "limit") {
    if (!absl::SimpleAtoi(value, &parsed.limit) || parsed.limit < 1 ||
        parsed.limit > kMaxListLimit) {
      return absl::InvalidArgumentError(
          absl::StrCat("--limit must be an integer between 1 and ",
                       kMaxListLimit, ", got '", value, "'"));
    }
  } else if (name == "window") {
    absl::StatusOr<int> window = ParseRegressWindow(value);
    if (!window.ok()) return window.status();
    parsed.regress.window = *window;
  } else if (name == "baseline") {
    absl::StatusOr<int64_t> run = ParseRunIdArg(value);
    if (!run.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--baseline: ", run.status().message()));
    }
    parsed.regress.baseline_run = *run;
  } else if (name == "reference") {
    return AddRegressReference(value, parsed.regress);
  } else if (name == "tolerance") {
    absl::StatusOr<double> tolerance = ParseRegressTolerance(value);
    if (!tolerance.ok()) return tolerance.status();
    parsed.regress.tolerance_pct = *tolerance;
  } else if (name == "metric") {
    absl::StatusOr<RegressMetric> metric = ParseRegressMetric(value);
    if (!metric.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metric: ", metric.status().message()));
    }
    std::vector<RegressMetric>& metrics = parsed.regress.metrics;
    if (std::find(metrics.begin(), metrics.end(), *metric) != metrics.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metric ", value, " given twice"));
    }
    metrics.push_back(*metric);
  } else if (name == "junit") {
    if (value.empty()) {
      return absl::InvalidArgumentError(
          "--junit needs a FILE, got an empty value");
    }
    parsed.regress.junit_path = value;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileText(const std::string& path,
                                         const char* what) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path,
                                            "': ", std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0 &&
         text.size() <= kMaxFileBytes) {
    text.append(buffer, n);
  }
  int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path,
                                            "': ", std::strerror(read_errno)));
  }
  if (text.size() > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", path, "' is larger than ", kMaxFileBytes, " bytes"));
  }
  return text;
}

absl::StatusOr<std::string> ReadSpec(const std::string& source,
                                     std::istream& in) {
  if (source != "-") return ReadFileText(source, "spec file");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad()) return absl::NotFoundError("cannot read the spec from stdin");
  return text;
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  auto text = ReadFileText(path, "token file");
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(*text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file '", path, "' is empty"));
  }
  return token;
}

}  // namespace

std::string UsageText() {
  return absl::StrCat(
      "usage: hpcai500 [--coordinator HOST:PORT] [--token-file FILE] "
      "COMMAND [ARGS]\n"
      "\n"
      "commands:\n"
      "  submit SPEC [--wait]    submit a run spec (YAML file, - for stdin);\n"
      "                          prints the new run ids; --wait then watches\n"
      "  watch RUN               live log of a run, then its result\n"
      "  list [--name N] [--workload W] [--config C] [--state S] [--limit K]\n"
      "                          the newest K (default 100) runs matching\n"
      "                          every filter given; S: queued, starting,\n"
      "                          running, succeeded, failed, cancelled\n"
      "  show RUN [--json]       one run: spec, epochs, score\n"
      "  cancel RUN              cancel a queued or running run\n"
      "  nodes                   the agents' nodes\n"
      "  leaderboard [--workload W] [--config C] [--json]\n"
      "                          submissions ranked by Valid FLOPS\n"
      "  regress SPEC [--window N] [--baseline RUN] [--tolerance PCT]\n"
      "          [--reference METRIC=VALUE]... [--metric M]... [--json]\n"
      "          [--junit FILE]\n"
      "                          submit --wait, then compare with the median\n"
      "                          of the newest N (default 5) earlier runs of\n"
      "                          the same name and shape, run RUN, or fixed\n"
      "                          VALUEs: a drop over PCT% (default 5)\n"
      "                          regresses, and so does missing a target the\n"
      "                          baseline reached. M: throughput, flops,\n"
      "                          valid_flops, quality (default all but\n"
      "                          flops). --json: the report as JSON, the live\n"
      "                          log on stderr; --junit: JUnit XML\n"
      "\n"
      "The coordinator is --coordinator, else $",
      kCoordinatorEnvVar, ", else ", kDefaultCoordinator,
      ".\n"
      "--token-file sends the file's token as 'authorization: Bearer ...'.\n"
      "\n"
      "exit codes (submit --wait, watch): 0 reached the target quality, 1\n"
      "finished below it, 2 failed or cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n"
      "exit codes (regress): 0 no regression (or no baseline yet), 1 a metric\n"
      "regressed, 2 the run failed or was cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n");
}

absl::StatusOr<CliArgs> ParseCliArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& coordinator_env) {
  CliArgs parsed;
  parsed.coordinator = coordinator_env.has_value() && !coordinator_env->empty()
                           ? *coordinator_env
                           : kDefaultCoordinator;
  std::set<std::string> seen;
  std::vector<std::string> command_flags;
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool is_flag = !only_positional && arg.size() > 1 && arg[0] == '-';
    if (is_flag && arg == "--") {
      only_positional = true;
      continue;
    }
    if (!is_flag) {
      if (parsed.command.empty()) {
        parsed.command = arg;
      } else {
        parsed.positional.push_back(arg);
      }
      continue;
    }
    if (arg == "-h") {
      parsed.help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", arg, "'"));
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name.resize(equals);
    }
    auto flag = Flags().find(name);
    if (flag == Flags().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", name, "'"));
    }
    if (!seen.insert(name).second && !flag->second.repeatable) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", name, "' given twice"));
    }
    if (flag->second.takes_value && !value.has_value()) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag '--", name, "' needs a value"));
      }
      value = args[++i];
    }
    if (!flag->second.takes_value && value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '--", name, "' takes no value"));
    }
    if (!flag->second.commands.empty()) command_flags.push_back(name);
    absl::Status set = SetFlag(parsed, name, value.value_or(""));
    if (!set.ok()) return set;
  }

  if (parsed.command == "help") {
    parsed.help = true;
    parsed.command.clear();
  }
  if (parsed.help) return parsed;
  if (parsed.command.empty()) {
    return absl::InvalidArgumentError("no command given");
  }
  auto command = CommandArgs().find(parsed.command);
  if (command == CommandArgs().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command '", parsed.command, "'"));
  }
  for (const std::string& name : command_flags) {
    if (Flags().at(name).commands.count(parsed.command) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", parsed.command, "' does not take '--", name, "'"));
    }
  }
  const std::vector<std::string>& expected = command->second;
  if (parsed.positional.size() < expected.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", parsed.command, "' needs ", absl::StrJoin(expected, " ")));
  }
  if (parsed.positional.size() > expected.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", parsed.positional[expected.size()],
        "' after '", parsed.command, "'"));
  }
  if (!expected.empty() && expected[0] == "RUN") {
    auto id = ParseRunIdArg(parsed.positional[0]);
    if (!id.ok()) return id.status();
  }
  return parsed;
}

int RunCli(const std::vector<std::string>& args, const CliEnvironment& env) {
  std::ostream& out = *env.out;
  std::ostream& err = *env.err;
  auto parsed = ParseCliArgs(args, env.coordinator_env);
  if (!parsed.ok()) {
    err << "hpcai500: " << parsed.status().message() << "\n\n" << UsageText();
    return kExitUsage;
  }
  if (parsed->help) {
    out << UsageText();
    return kExitOk;
  }

  CommandOptions options;
  options.coordinator = parsed->coordinator;
  options.time_zone = env.time_zone;
  if (!parsed->token_file.empty()) {
    auto token = ReadToken(parsed->token_file);
    if (!token.ok()) {
      err << "hpcai500: " << token.status().message() << "\n";
      return kExitNoInput;
    }
    options.token = *token;
  }
  std::string spec_text;
  if (parsed->command == "submit" || parsed->command == "regress") {
    auto spec = ReadSpec(parsed->positional[0], *env.in);
    if (!spec.ok()) {
      err << "hpcai500: " << spec.status().message() << "\n";
      return kExitNoInput;
    }
    spec_text = std::move(*spec);
  }

  std::unique_ptr<v1::ClientService::StubInterface> stub =
      env.connect(parsed->coordinator);
  Commands commands(stub.get(), std::move(options), out, err);
  const std::string& command = parsed->command;
  if (command == "submit") {
    const std::string& source = parsed->positional[0];
    return commands.Submit(source == "-" ? "from stdin" : "'" + source + "'",
                           spec_text, parsed->wait);
  }
  if (command == "regress") {
    const std::string& source = parsed->positional[0];
    return commands.Regress(source == "-" ? "from stdin" : "'" + source + "'",
                            spec_text, parsed->regress, parsed->json);
  }
  if (command == "list") {
    v1::ListRunsRequest filter;
    filter.set_name(parsed->name);
    filter.set_workload(parsed->workload);
    filter.set_config(parsed->config);
    filter.set_state(parsed->state);
    filter.set_limit(parsed->limit);
    return commands.List(filter);
  }
  if (command == "nodes") return commands.Nodes();
  if (command == "leaderboard") {
    return commands.Leaderboard(parsed->workload, parsed->config, parsed->json);
  }
  // The rest take a RUN, already checked by ParseCliArgs.
  int64_t run_id = *ParseRunIdArg(parsed->positional[0]);
  if (command == "watch") return commands.Watch(run_id);
  if (command == "show") return commands.Show(run_id, parsed->json);
  if (command == "cancel") return commands.Cancel(run_id);
  err << "hpcai500: command '" << command << "' is not implemented\n";
  return kExitUsage;
}

}  // namespace hpcai500
