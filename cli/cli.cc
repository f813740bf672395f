#include "cli/cli.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/history.h"
#include "cli/regress_flags.h"
#include "common/flags.h"
#include "common/run_state.h"
#include "common/spec.h"
#include "common/status_macros.h"
#include "common/suite.h"
#include "common/token.h"

namespace hpcai500 {
namespace {

// Specs are a screenful of YAML; anything far bigger is a wrong file.
constexpr size_t kMaxFileBytes = 1 << 20;
// The most runs the coordinator lists for one request; `list` pages.
constexpr int kMaxListLimit = 10'000;

// Positional arguments each command takes, and what they are called.
const std::map<std::string, std::vector<std::string>>& CommandArgs() {
  static const auto* const kCommands =
      new std::map<std::string, std::vector<std::string>>{
          {"submit", {"SPEC"}},  {"watch", {"RUN"}},
          {"list", {}},          {"show", {"RUN"}},
          {"cancel", {"RUN"}},   {"nodes", {}},
          {"leaderboard", {}},   {"help", {}},
          {"regress", {"SPEC"}}, {"baseline", {"promote", "RUN"}},
          {"audit", {}},         {"invalidate", {"RUN"}},
          {"hold", {"RUN"}},     {"release", {"RUN"}},
          {"drain", {"NODE"}},   {"resume", {"NODE"}},
          {"queues", {}},        {"history", {}},
          {"check", {"NODE"}},
      };
  return *kCommands;
}

// The command line as CLI11 binds it: the flags taken as given go straight
// into `args`; the rest wait here as text until ConvertListFlags and
// ConvertRegressFlags check them.
struct RawCliArgs {
  CliArgs args;
  std::string coordinator;
  std::string state, limit, offset, since, until, window, baseline, tolerance,
      min_history;
  std::string timeout;  // check
  std::vector<std::string> references, metrics;
};

// Adds `command` with its flags to `app`; its positional arguments go to
// raw.args.positional, and flags it does not know fall through to `app`.
void AddCommand(CLI::App& app, const std::string& command, RawCliArgs& raw) {
  CLI::App* sub = app.add_subcommand(command);
  sub->set_help_flag();
  sub->allow_extras();
  sub->fallthrough();
  sub->add_option("args", raw.args.positional);
  CliArgs& args = raw.args;
  if (command == "submit") AddSwitch(*sub, "wait", &args.wait);
  if (command == "show" || command == "leaderboard" || command == "regress" ||
      command == "audit" || command == "nodes" || command == "queues" ||
      command == "history" || command == "check") {
    AddSwitch(*sub, "json", &args.json);
  }
  if (command == "check") AddValueFlag(*sub, "timeout", &raw.timeout);
  if (command == "leaderboard" || command == "list") {
    AddValueFlag(*sub, "workload", &args.workload);
    AddValueFlag(*sub, "config", &args.config);
  }
  if (command == "list" || command == "history") {
    AddValueFlag(*sub, "name", &args.name);
    AddValueFlag(*sub, "state", &raw.state);
  }
  if (command == "history") {
    AddValueFlag(*sub, "user", &args.user);
    AddValueFlag(*sub, "queue", &args.queue);
    AddValueFlag(*sub, "since", &raw.since);
    AddValueFlag(*sub, "until", &raw.until);
  }
  if (command == "list" || command == "audit" || command == "history" ||
      command == "leaderboard") {
    AddValueFlag(*sub, "limit", &raw.limit);
  }
  if (command == "leaderboard") AddValueFlag(*sub, "offset", &raw.offset);
  if (command == "invalidate" || command == "drain") {
    AddValueFlag(*sub, "reason", &args.reason)->required();
  }
  if (command == "regress") {
    AddValueFlag(*sub, "window", &raw.window);
    AddValueFlag(*sub, "baseline", &raw.baseline);
    AddRepeatedFlag(*sub, "reference", &raw.references);
    AddValueFlag(*sub, "tolerance", &raw.tolerance);
    AddRepeatedFlag(*sub, "metric", &raw.metrics);
    AddValueFlag(*sub, "junit", &args.regress.junit_path);
    AddValueFlag(*sub, "markdown", &args.regress.markdown_path);
    AddValueFlag(*sub, "json-file", &args.regress.json_path);
    AddValueFlag(*sub, "min-history", &raw.min_history);
  }
}

// The whole command line, bound into `raw` (borrowed for the App's life).
std::unique_ptr<CLI::App> NewCliFlagApp(RawCliArgs& raw) {
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500", /*allow_extras=*/true);
  app->require_subcommand(0, 1);
  AddValueFlag(*app, "coordinator", &raw.coordinator);
  AddTokenFlags(*app, &raw.args.token);
  AddClientTlsFlags(*app, &raw.args.tls, /*with_client_certificate=*/false);
  AddSwitch(*app, "help,h", &raw.args.help);
  for (const auto& [command, positional] : CommandArgs()) {
    AddCommand(*app, command, raw);
  }
  return app;
}

// Why an argument CLI11 did not place is wrong, given the command (empty
// when none came before it).
absl::Status ExtraArgumentError(const CLI::App& app, const std::string& extra,
                                const std::string& command) {
  if (extra.size() < 2 || extra[0] != '-') {
    if (command.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown command '", extra, "'"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", extra, "' after '", command, "'"));
  }
  const std::string flag = extra.substr(0, extra.find('='));
  std::vector<std::string> takers;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_option_no_throw(flag) != nullptr) {
      takers.push_back(sub->get_name());
    }
  }
  if (takers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown flag '", flag, "'"));
  }
  if (command.empty() ||
      std::find(takers.begin(), takers.end(), command) != takers.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag '", flag, "' goes after its command (",
                     absl::StrJoin(takers, ", "), ")"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", command, "' does not take '", flag, "'"));
}

// The first argument neither `app` nor its command placed, as an error.
absl::Status CheckNoExtras(const CLI::App& app, const CLI::App* sub) {
  const std::string command = sub == nullptr ? "" : sub->get_name();
  std::vector<std::string> extras = app.remaining();
  if (sub != nullptr) {
    std::vector<std::string> more = sub->remaining();
    extras.insert(extras.end(), more.begin(), more.end());
  }
  for (const std::string& extra : extras) {
    if (extra == "--") continue;
    return ExtraArgumentError(app, extra, command);
  }
  return absl::OkStatus();
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

// --state and --limit into `args`.
absl::Status ConvertListFlags(const RawCliArgs& raw, CliArgs& args) {
  if (!raw.state.empty()) {
    absl::StatusOr<v1::RunState> state = ParseRunStateName(raw.state);
    if (!state.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--state: ", state.status().message()));
    }
    args.state = *state;
  }
  if (!raw.limit.empty() && (!absl::SimpleAtoi(raw.limit, &args.limit) ||
                             args.limit < 1 || args.limit > kMaxListLimit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--limit must be an integer between 1 and ", kMaxListLimit,
                     ", got '", raw.limit, "'"));
  }
  if (!raw.offset.empty() &&
      (!absl::SimpleAtoi(raw.offset, &args.offset) || args.offset < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--offset must be a non-negative integer, got '", raw.offset, "'"));
  }
  return absl::OkStatus();
}

// history's --since and --until (relative ones counting back from now)
// into `args`.
absl::Status ConvertHistoryTimes(const RawCliArgs& raw, CliArgs& args) {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (const auto& [flag, text, ms] :
       {std::tuple<const char*, const std::string&, int64_t&>{
            "--since", raw.since, args.since_ms},
        {"--until", raw.until, args.until_ms}}) {
    if (text.empty()) continue;
    absl::StatusOr<int64_t> parsed = ParseHistoryTime(text, now_ms);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", parsed.status().message()));
    }
    if (*parsed <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", text, "' is before 1970"));
    }
    ms = *parsed;
  }
  if (args.since_ms > 0 && args.until_ms > 0 &&
      args.until_ms <= args.since_ms) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--until '", raw.until, "' is not after --since '", raw.since, "'"));
  }
  return absl::OkStatus();
}

// --metric values, each once, in the order given, into `metrics`.
absl::Status ConvertMetrics(const std::vector<std::string>& values,
                            std::vector<RegressMetric>& metrics) {
  for (const std::string& value : values) {
    absl::StatusOr<RegressMetric> metric = ParseRegressMetric(value);
    if (!metric.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metric: ", metric.status().message()));
    }
    if (std::find(metrics.begin(), metrics.end(), *metric) != metrics.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metric ", value, " given twice"));
    }
    metrics.push_back(*metric);
  }
  return absl::OkStatus();
}

// regress's --window, --baseline, --tolerance, --reference and --metric.
absl::Status ConvertRegressFlags(const RawCliArgs& raw,
                                 RegressOptions& options) {
  if (!raw.window.empty()) {
    ASSIGN_OR_RETURN(options.window, ParseRegressWindow(raw.window));
  }
  if (!raw.baseline.empty()) {
    RETURN_IF_ERROR(ParseRegressBaseline(raw.baseline, options));
  }
  if (!raw.min_history.empty()) {
    ASSIGN_OR_RETURN(options.band.min_history,
                     ParseRegressMinHistory(raw.min_history));
  }
  for (const std::string& reference : raw.references) {
    RETURN_IF_ERROR(AddRegressReference(reference, options));
  }
  if (!raw.tolerance.empty()) {
    ASSIGN_OR_RETURN(options.tolerance_pct,
                     ParseRegressTolerance(raw.tolerance));
  }
  return ConvertMetrics(raw.metrics, options.metrics);
}

// check's --timeout (seconds or a duration: 90s, 5m) into options.timeout.
absl::Status ConvertCheckTimeout(const std::string& text,
                                 CheckOptions& options) {
  if (text.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t seconds, DurationSeconds(text, "--timeout"));
  if (seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout: must be at least 1 second, got '", text, "'"));
  }
  options.timeout = absl::Seconds(seconds);
  return absl::OkStatus();
}

// The positional arguments `command` takes: their count, and a RUN's form.
absl::Status CheckPositional(const CliArgs& args) {
  const std::vector<std::string>& expected = CommandArgs().at(args.command);
  if (args.positional.size() < expected.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", args.command, "' needs ", absl::StrJoin(expected, " ")));
  }
  if (args.positional.size() > expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", args.positional[expected.size()],
                     "' after '", args.command, "'"));
  }
  if (!expected.empty() && expected[0] == "RUN") {
    return ParseRunIdArg(args.positional[0]).status();
  }
  if (args.command == "baseline") {
    if (args.positional[0] != "promote") {
      return absl::InvalidArgumentError(absl::StrCat(
          "'baseline' knows only 'promote', got '", args.positional[0], "'"));
    }
    return ParseRunIdArg(args.positional[1]).status();
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

}  // namespace

std::string UsageText() {
  return absl::StrCat(
      "usage: hpcai500 [--coordinator HOST:PORT]\n"
      "                [--token-file FILE | --token TOKEN] [--tls-ca FILE]\n"
      "                COMMAND [ARGS]\n"
      "\n"
      "commands:\n"
      "  submit SPEC [--wait]    submit a run spec (YAML file, - for stdin)\n"
      "                          or a suite of specs (suite: NAME + specs:,\n"
      "                          or documents separated by ---); prints the\n"
      "                          new run ids; --wait then watches each\n"
      "  watch RUN               live log of a run, then its result\n"
      "  list [--name N] [--workload W] [--config C] [--state S] [--limit K]\n"
      "                          the newest K (default 100) runs matching\n"
      "                          every filter given; S: queued, starting,\n"
      "                          running, succeeded, failed, cancelled\n"
      "  show RUN [--json]       one run: spec, attempts and the inventory\n"
      "                          of their nodes, epochs, score\n"
      "  cancel RUN              cancel a queued or running run\n"
      "  hold RUN, release RUN   keep a queued run from starting, and let it\n"
      "                          (your own runs; an admin's any)\n"
      "  nodes [--json]          the agents' nodes: state (idle, busy,\n"
      "                          draining, drained, down) and why, slots,\n"
      "                          devices, driver, labels\n"
      "  drain NODE --reason TEXT, resume NODE\n"
      "                          stop placing runs on a node (what it runs\n"
      "                          finishes), and start again (admin only)\n"
      "  queues [--json]         the queues: nodes, runs, priorities\n"
      "  check NODE [--timeout T] [--json]\n"
      "                          health check: a noop run pinned to NODE\n"
      "                          (rendezvous, one all-reduce), one line per\n"
      "                          phase with its time; T: seconds or 90s, 5m\n"
      "                          (default 2m; then the run is cancelled)\n"
      "  invalidate RUN --reason TEXT\n"
      "                          take a succeeded run's result (and its\n"
      "                          submission) off the leaderboard; the run\n"
      "                          stays, showing who and why (admin only)\n"
      "  audit [--limit K] [--json]\n"
      "                          the newest K (default 100) audited calls:\n"
      "                          who did what, from where, allowed or not\n"
      "                          (admin tokens only)\n"
      "  leaderboard [--workload W] [--config C] [--limit K] [--offset N]\n"
      "              [--json]    submissions ranked by Valid FLOPS; a page\n"
      "                          of K rows after the first N (default all)\n"
      "  history [--user U] [--state S] [--since T] [--until T] [--name N]\n"
      "          [--queue Q] [--limit K] [--json]\n"
      "                          accounting, like sacct: the newest K\n"
      "                          (default 100) runs submitted in [since,\n"
      "                          until) with queue, nodes, times, elapsed,\n"
      "                          node-hours, attempts and why each ended; T:\n"
      "                          YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] (UTC) or\n"
      "                          a time ago: 30m, 2h, 7d, 1w\n"
      "  regress SPEC|SUITE [--baseline last-good|RUN|FILE] [--window N]\n"
      "          [--min-history K] [--tolerance PCT]\n"
      "          [--reference METRIC=VALUE]... [--metric M]... [--json]\n"
      "          [--json-file FILE] [--junit FILE] [--markdown FILE]\n"
      "                          submit --wait, then judge each spec's\n"
      "                          metrics against its baseline: the promoted\n"
      "                          run (baseline promote), else the median of\n"
      "                          the newest N (default 10) good runs of the\n"
      "                          same name and shape; or the newest good\n"
      "                          one, run RUN, a --json-file FILE, fixed\n"
      "                          VALUEs. The band is learned from those N\n"
      "                          runs (robust z-score: 3 x 1.4826 x MAD, at\n"
      "                          least 2%); with fewer than K (default 5)\n"
      "                          it is PCT% (default 5). A move outside the\n"
      "                          band in the bad direction regresses, and so\n"
      "                          does missing a target the baseline reached.\n"
      "                          M: throughput, flops, valid_flops, quality,\n"
      "                          time_to_target (default all but flops).\n"
      "                          --json: the report on stdout, the live log\n"
      "                          on stderr; --junit: JUnit XML; --markdown:\n"
      "                          a summary for CI\n"
      "  baseline promote RUN    make a succeeded run the regress baseline of\n"
      "                          its series (your own runs; an admin's any)\n"
      "\n"
      "The coordinator is --coordinator, else $",
      kCoordinatorEnvVar, ", else ", kDefaultCoordinator,
      ".\n"
      "--token-file sends the file's token as 'authorization: Bearer ...';\n"
      "--token gives it inline; without either, $",
      kTokenEnvVar,
      " if set.\n"
      "--tls-ca connects over TLS, trusting only that CA (PEM) for the\n"
      "coordinator's certificate (for hpcai500d --tls-cert).\n"
      "\n"
      "exit codes (submit --wait, watch): 0 reached the target quality, 1\n"
      "finished below it, 2 failed or cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n"
      "exit codes (check): 0 healthy, 2 unhealthy (the node is unknown, down,\n"
      "drained or draining, or the noop run failed or did not end in time;\n"
      "the output says which) or any error (such as an unreachable\n"
      "coordinator); 64 bad command line, 66 unreadable file.\n"
      "exit codes (regress): 0 no regression (or no baseline yet), 1 a metric\n"
      "regressed, 2 the run failed or was cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n");
}

absl::StatusOr<CliArgs> ParseCliArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& coordinator_env) {
  RawCliArgs raw;
  std::unique_ptr<CLI::App> app = NewCliFlagApp(raw);
  RETURN_IF_ERROR(ParseFlags(*app, args));
  CliArgs& parsed = raw.args;
  if (!raw.coordinator.empty()) {
    parsed.coordinator = raw.coordinator;
  } else if (coordinator_env.has_value() && !coordinator_env->empty()) {
    parsed.coordinator = *coordinator_env;
  } else {
    parsed.coordinator = kDefaultCoordinator;
  }
  std::vector<CLI::App*> commands = app->get_subcommands();
  const CLI::App* sub = commands.empty() ? nullptr : commands.front();
  if (sub != nullptr) parsed.command = sub->get_name();
  if (parsed.command == "help") {
    parsed.help = true;
    parsed.command.clear();
  }
  if (parsed.help) return std::move(parsed);
  RETURN_IF_ERROR(CheckNoExtras(*app, sub));
  if (parsed.command.empty()) {
    return absl::InvalidArgumentError("no command given");
  }
  RETURN_IF_ERROR(ConvertListFlags(raw, parsed));
  RETURN_IF_ERROR(ConvertHistoryTimes(raw, parsed));
  RETURN_IF_ERROR(ConvertRegressFlags(raw, parsed.regress));
  RETURN_IF_ERROR(ConvertCheckTimeout(raw.timeout, parsed.check));
  RETURN_IF_ERROR(CheckPositional(parsed));
  return std::move(parsed);
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
  absl::StatusOr<std::string> token =
      ResolveToken(parsed->token, env.token_env);
  if (!token.ok()) {
    err << "hpcai500: " << token.status().message() << "\n";
    return kExitNoInput;
  }
  options.token = *std::move(token);
  absl::StatusOr<TlsFiles> tls = LoadClientTlsFiles(parsed->tls);
  if (!tls.ok()) {
    err << "hpcai500: " << tls.status().message() << "\n";
    return kExitNoInput;
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
  if (parsed->command == "regress" &&
      parsed->regress.baseline == RegressBaselineKind::kFile) {
    const std::string& path = parsed->regress.baseline_file;
    absl::StatusOr<std::string> text = ReadFileText(path, "baseline file");
    if (!text.ok()) {
      err << "hpcai500: " << text.status().message() << "\n";
      return kExitNoInput;
    }
    auto values = ParseRegressBaselineFile(*text);
    if (!values.ok()) {
      err << "hpcai500: baseline file '" << path
          << "': " << values.status().message() << "\n";
      return kExitNoInput;
    }
    parsed->regress.file_values = *std::move(values);
  }
  if (parsed->command == "regress" &&
      parsed->regress.baseline == RegressBaselineKind::kRun) {
    // One run is one series' baseline: every other spec of a suite would be
    // judged against a different benchmark.
    absl::StatusOr<Suite> suite = ParseSuite(spec_text);
    if (suite.ok() && suite->specs.size() > 1) {
      err << "hpcai500: --baseline " << parsed->regress.baseline_run
          << " names one run, but '" << parsed->positional[0]
          << "' is a suite of " << suite->specs.size()
          << " specs; judge a suite against --baseline last-good, a FILE, "
             "or runs promoted per spec (hpcai500 baseline promote RUN)\n";
      return kExitUsage;
    }
  }

  std::unique_ptr<v1::ClientService::StubInterface> stub =
      env.connect(parsed->coordinator, CoordinatorChannelCredentials(*tls));
  Commands commands(stub.get(), std::move(options), out, err);
  const std::string& command = parsed->command;
  if (command == "submit") {
    const std::string& source = parsed->positional[0];
    return commands.Submit(source == "-" ? "from stdin" : "'" + source + "'",
                           spec_text, parsed->wait);
  }
  if (command == "baseline") {
    return commands.PromoteBaseline(*ParseRunIdArg(parsed->positional[1]));
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
  if (command == "nodes") return commands.Nodes(parsed->json);
  if (command == "queues") return commands.Queues(parsed->json);
  if (command == "drain") {
    return commands.Drain(parsed->positional[0], parsed->reason);
  }
  if (command == "resume") return commands.Resume(parsed->positional[0]);
  if (command == "check") {
    CheckOptions check = parsed->check;
    check.json = parsed->json;
    return commands.Check(parsed->positional[0], check);
  }
  if (command == "audit") return commands.Audit(parsed->limit, parsed->json);
  if (command == "leaderboard") {
    v1::LeaderboardRequest request;
    request.set_workload(parsed->workload);
    request.set_config(parsed->config);
    request.set_limit(parsed->limit);
    request.set_offset(parsed->offset);
    return commands.Leaderboard(request, parsed->json);
  }
  if (command == "history") {
    v1::ListRunsRequest filter;
    filter.set_name(parsed->name);
    filter.set_state(parsed->state);
    filter.set_user(parsed->user);
    filter.set_queue(parsed->queue);
    filter.set_since_ms(parsed->since_ms);
    filter.set_until_ms(parsed->until_ms);
    filter.set_limit(parsed->limit);
    return commands.History(filter, parsed->json);
  }
  // The rest take a RUN, already checked by ParseCliArgs.
  int64_t run_id = *ParseRunIdArg(parsed->positional[0]);
  if (command == "watch") return commands.Watch(run_id);
  if (command == "show") return commands.Show(run_id, parsed->json);
  if (command == "cancel") return commands.Cancel(run_id);
  if (command == "hold") return commands.Hold(run_id, /*hold=*/true);
  if (command == "release") return commands.Hold(run_id, /*hold=*/false);
  if (command == "invalidate") {
    return commands.Invalidate(run_id, parsed->reason);
  }
  err << "hpcai500: command '" << command << "' is not implemented\n";
  return kExitUsage;
}

}  // namespace hpcai500
