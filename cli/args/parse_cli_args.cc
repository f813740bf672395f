// ParseCliArgs: the command line checked and converted into CliArgs
// (cli/args/parse_cli_args.h).
#include "cli/args/parse_cli_args.h"

#include <algorithm>
#include <memory>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli/args/command_flags.h"
#include "cli/args/command_table.h"
#include "cli/regress/regress_flags.h"
#include "cli/text/history.h"
#include "common/flags.h"
#include "common/request_id.h"
#include "common/run_state.h"
#include "common/status_macros.h"
#include "methodology/spec.h"

namespace hpcai500 {
namespace {

// The most runs the coordinator lists for one request; `list` pages.
constexpr int kMaxListLimit = 10'000;

// Why an argument CLI11 did not place is wrong, given the command (empty
// when none came before it).
absl::Status ExtraArgumentError(const CLI::App& app, const std::string& extra,
                                const std::string& command) {
  if (extra.size() < 2 || extra[0] != '-') {
    if (command.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown command '", extra, "'",
          extra == "token" ? " (tokens are made on the coordinator's host: "
                             "hpcai500d token --help)"
                           : ""));
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
  std::sort(takers.begin(), takers.end());  // whatever the table's order
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

absl::StatusOr<int64_t> ParseRunId(const std::string& text) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0 || text.front() == '+' ||
      absl::ascii_isspace(text.front())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a run id (a positive integer), got '", text, "'"));
  }
  return id;
}

// The flags taken as given, from `raw` into `args`.
void CopyTextFlags(const RawCliArgs& raw, CliArgs& args) {
  args.wait = raw.wait;
  args.json = raw.json;
  args.check.json = raw.json;
  args.workload = raw.workload;
  args.config = raw.config;
  args.name = raw.name;
  args.user = raw.user;
  args.queue = raw.queue;
  args.reason = raw.reason;
  args.series = raw.series;
  args.regressions_only = raw.regressions_only;
  args.regress.junit_path = raw.junit;
  args.regress.markdown_path = raw.markdown;
  args.regress.json_path = raw.json_file;
  args.request_id = raw.request_id;
  args.out = raw.out;
  args.submission = raw.submission;
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

// regress's --window, --baseline, --tolerance, --max-cv, --reference and
// --metric.
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
                     ParseRegressPercent("--tolerance", raw.tolerance));
  }
  if (!raw.max_cv.empty()) {
    ASSIGN_OR_RETURN(options.max_cv_pct,
                     ParseRegressPercent("--max-cv", raw.max_cv));
  }
  return ConvertMetrics(raw.metrics, options.metrics);
}

// A duration flag's value (seconds or 90s, 5m, 2h) in whole seconds;
// InvalidArgument naming `flag` below one second.
absl::StatusOr<int64_t> PositiveSeconds(const std::string& text,
                                        absl::string_view flag) {
  ASSIGN_OR_RETURN(int64_t seconds, DurationSeconds(text, flag));
  if (seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": must be at least 1 second, got '", text, "'"));
  }
  return seconds;
}

// check's --timeout into options.timeout.
absl::Status ConvertCheckTimeout(const std::string& text,
                                 CheckOptions& options) {
  if (text.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t seconds, PositiveSeconds(text, "--timeout"));
  options.timeout = absl::Seconds(seconds);
  return absl::OkStatus();
}

// The positional arguments `command` takes: their count, its words, and
// RUN into args.run_id.
absl::Status ConvertPositional(const CliCommand& command, CliArgs& args) {
  const std::vector<std::string>& expected = command.args;
  const size_t required = static_cast<size_t>(
      std::count_if(expected.begin(), expected.end(),
                    [](const std::string& arg) { return arg[0] != '['; }));
  if (args.positional.size() < required) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", command.name, "' needs ", absl::StrJoin(expected, " ")));
  }
  // A last argument spelled "[NAME...]" takes any number of words.
  const bool variadic =
      !expected.empty() && absl::EndsWith(expected.back(), "...]");
  if (!variadic && args.positional.size() > expected.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", args.positional[expected.size()],
                     "' after '", command.name, "'"));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) {
    const std::string& given = args.positional[i];
    absl::string_view spelled = expected[std::min(i, expected.size() - 1)];
    absl::ConsumePrefix(&spelled, "[");
    absl::ConsumeSuffix(&spelled, "]");
    if (spelled == kRunArg) {
      ASSIGN_OR_RETURN(args.run_id, ParseRunId(given));
      continue;
    }
    if (absl::AsciiStrToLower(spelled) != spelled) continue;
    const std::vector<absl::string_view> words = absl::StrSplit(spelled, '|');
    if (std::find(words.begin(), words.end(), given) == words.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", command.name, "' knows only '",
                       absl::StrJoin(words, "' or '"), "', got '", given, "'"));
    }
  }
  return absl::OkStatus();
}

// maintenance: --for (a duration) only and always with `start`, --reason
// only with it.
absl::Status ConvertMaintenance(const RawCliArgs& raw, CliArgs& args) {
  const bool start = args.command == kMaintenanceCommand &&
                     !args.positional.empty() && args.positional[0] == "start";
  if (!start) {
    if (!raw.for_duration.empty() ||
        (args.command == kMaintenanceCommand && !raw.reason.empty())) {
      return absl::InvalidArgumentError(
          "--for and --reason: only with 'maintenance start'");
    }
    return absl::OkStatus();
  }
  if (raw.for_duration.empty()) {
    return absl::InvalidArgumentError(
        "'maintenance start' needs --for DURATION (such as 30m or 2h)");
  }
  ASSIGN_OR_RETURN(int64_t seconds, PositiveSeconds(raw.for_duration, "--for"));
  args.maintenance_ms = seconds * 1000;
  return absl::OkStatus();
}

// --request-id: checked here, sent as given.
absl::Status CheckRequestIdFlag(const std::string& request_id) {
  if (request_id.empty()) return absl::OkStatus();
  if (absl::Status id = CheckRequestId(request_id); !id.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request-id: ", id.message()));
  }
  return absl::OkStatus();
}

// Every command flag's value from `raw` into `args`, checked and converted.
absl::Status ConvertCommandFlags(const RawCliArgs& raw, CliArgs& args) {
  CopyTextFlags(raw, args);
  RETURN_IF_ERROR(ConvertListFlags(raw, args));
  RETURN_IF_ERROR(ConvertHistoryTimes(raw, args));
  RETURN_IF_ERROR(ConvertRegressFlags(raw, args.regress));
  RETURN_IF_ERROR(ConvertCheckTimeout(raw.timeout, args.check));
  RETURN_IF_ERROR(ParseSweepAxes(raw.nodes, raw.ranks_per_node, raw.precision,
                                 raw.compression, raw.scaling, args.sweep));
  args.sweep.dry_run = raw.dry_run;
  return CheckRequestIdFlag(raw.request_id);
}

// The flag, else the environment, else the default.
std::string ResolveCoordinator(
    const std::string& flag,
    const std::optional<std::string>& coordinator_env) {
  if (!flag.empty()) return flag;
  if (coordinator_env.has_value() && !coordinator_env->empty()) {
    return *coordinator_env;
  }
  return kDefaultCoordinator;
}

}  // namespace

absl::StatusOr<CliArgs> ParseCliArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& coordinator_env) {
  RawCliArgs raw;
  std::unique_ptr<CLI::App> app = NewCliFlagApp(raw);
  RETURN_IF_ERROR(ParseFlags(*app, args));
  CliArgs& parsed = raw.args;
  parsed.coordinator = ResolveCoordinator(raw.coordinator, coordinator_env);
  std::vector<CLI::App*> commands = app->get_subcommands();
  const CLI::App* sub = commands.empty() ? nullptr : commands.front();
  if (sub != nullptr) parsed.command = sub->get_name();
  if (parsed.command == kHelpCommand) {
    parsed.help = true;
    parsed.command.clear();
  }
  // Before --help: `hpcai500 bogus --help` names the unknown command.
  RETURN_IF_ERROR(CheckNoExtras(*app, sub));
  if (parsed.help) return std::move(parsed);
  if (parsed.command.empty()) {
    return absl::InvalidArgumentError("no command given");
  }
  const CliCommand& command = *FindCliCommand(parsed.command);
  RETURN_IF_ERROR(MissingRequiredFlag(command, raw));
  RETURN_IF_ERROR(ConvertCommandFlags(raw, parsed));
  RETURN_IF_ERROR(ConvertPositional(command, parsed));
  RETURN_IF_ERROR(ConvertMaintenance(raw, parsed));
  return std::move(parsed);
}

}  // namespace hpcai500
