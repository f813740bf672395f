#include "cli/command_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/check_command.h"
#include "cli/commands.h"
#include "cli/regress_command.h"
#include "cli/sweep.h"
#include "cli/watch.h"
#include "common/token.h"

namespace hpcai500 {
namespace {

// The requests that list and history (one filter: each leaves unset what
// it takes no flag for) and leaderboard send, from their flags.
v1::ListRunsRequest RunsFilter(const CliArgs& args) {
  v1::ListRunsRequest filter;
  filter.set_name(args.name);
  filter.set_workload(args.workload);
  filter.set_config(args.config);
  filter.set_state(args.state);
  filter.set_user(args.user);
  filter.set_queue(args.queue);
  filter.set_since_ms(args.since_ms);
  filter.set_until_ms(args.until_ms);
  filter.set_limit(args.limit);
  return filter;
}

v1::LeaderboardRequest LeaderboardPage(const CliArgs& args) {
  v1::LeaderboardRequest request;
  request.set_workload(args.workload);
  request.set_config(args.config);
  request.set_limit(args.limit);
  request.set_offset(args.offset);
  return request;
}

// The column of the usage text at which descriptions begin.
constexpr size_t kDescriptionColumn = 26;

// A command's lines of the usage: "  SYNOPSIS", and its description from
// kDescriptionColumn, starting on the synopsis's last line where that
// leaves two spaces free, else below it.
std::string UsageLines(const CliCommand& command) {
  if (command.synopsis.empty()) return "";
  const std::vector<std::string> synopsis =
      absl::StrSplit(command.synopsis, '\n');
  const std::vector<std::string> description =
      absl::StrSplit(command.description, '\n');
  std::string text;
  for (size_t i = 0; i + 1 < synopsis.size(); ++i) {
    absl::StrAppend(&text, "  ", synopsis[i], "\n");
  }
  std::string last = absl::StrCat("  ", synopsis.back());
  auto line = description.begin();
  if (last.size() + 2 <= kDescriptionColumn) {
    last.resize(kDescriptionColumn, ' ');
    absl::StrAppend(&text, last, *line++, "\n");
  } else {
    absl::StrAppend(&text, last, "\n");
  }
  for (; line != description.end(); ++line) {
    absl::StrAppend(&text, std::string(kDescriptionColumn, ' '), *line, "\n");
  }
  return text;
}

// Every command's UsageLines, in the table's order.
std::string CommandLines() {
  std::string text;
  for (const CliCommand& command : CliCommands()) {
    absl::StrAppend(&text, UsageLines(command));
  }
  return text;
}

}  // namespace

const std::vector<CliCommand>& CliCommands() {
  static const auto* const kCommands = new std::vector<CliCommand>{
      {"submit",
       {kSpecArg},
       {"wait", "request-id"},
       "submit SPEC [--wait] [--request-id ID]",
       "submit a run spec (YAML file, - for stdin)\n"
       "or a suite of specs (suite: NAME + specs:,\n"
       "or documents separated by ---); prints the\n"
       "new run ids; --wait then watches each.\n"
       "Retried while the answer may be lost; the\n"
       "same ID again (a day) prints the first\n"
       "submit's runs instead of storing new ones",
       [](const CommandCall& call) {
         return RunWatcher(call.client, call.out, call.err)
             .Submit(call.spec_source, call.spec_yaml, call.args.wait,
                     /*runs=*/nullptr, call.args.request_id);
       }},
      {"sweep",
       {kSpecArg},
       {"nodes", "ranks-per-node", "precision", "compression", "scaling",
        "dry-run", "wait", "request-id"},
       "sweep SPEC [--nodes N,...] [--ranks-per-node R,...]\n"
       "      [--precision P,...] [--compression C,...]\n"
       "      [--scaling strong|weak] [--dry-run] [--wait]\n"
       "      [--request-id ID]",
       "a scaling study: one run per point of the\n"
       "axes' product (an axis not given keeps the\n"
       "spec's value), submitted as one suite and\n"
       "marked with the sweep's id; weak (default)\n"
       "keeps the spec's batch per rank, strong its\n"
       "global batch (batch_size x nodes x ranks\n"
       "per node) divided over each point's ranks.\n"
       "--dry-run lists the runs, submits nothing",
       [](const CommandCall& call) {
         return SubmitSweep(call.client, call.out, call.err, call.spec_source,
                            call.spec_yaml, call.args.sweep, call.args.wait,
                            call.args.request_id);
       }},
      {"watch",
       {kRunArg},
       {},
       "watch RUN",
       "live log of a run, then its result",
       [](const CommandCall& call) {
         return RunWatcher(call.client, call.out, call.err)
             .Watch(call.args.run_id);
       }},
      {"list",
       {},
       {"name", "workload", "config", "state", "limit", "json"},
       "list [--name N] [--workload W] [--config C] [--state S]\n"
       "     [--limit K] [--json]",
       "the newest K (default 100) runs matching\n"
       "every filter given; S: queued, starting,\n"
       "running, succeeded, failed, cancelled,\n"
       "aborted",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .List(RunsFilter(call.args), call.args.json);
       }},
      {"show",
       {kRunArg},
       {"json"},
       "show RUN [--json]",
       "one run: spec, attempts and the inventory\n"
       "of their nodes, epochs, the forecast of\n"
       "its quality (early abort), score",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Show(call.args.run_id, call.args.json);
       }},
      {"cancel",
       {kRunArg},
       {},
       "cancel RUN",
       "cancel a queued or running run",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Cancel(call.args.run_id);
       }},
      {"hold",
       {kRunArg},
       {},
       "hold RUN, release RUN",
       "keep a queued run from starting, and let it\n"
       "(your own runs; an admin's any)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Hold(call.args.run_id, /*hold=*/true);
       }},
      {"release",
       {kRunArg},
       {},
       "",
       "",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Hold(call.args.run_id, /*hold=*/false);
       }},
      {"nodes",
       {},
       {"json"},
       "nodes [--json]",
       "the agents' nodes: state (idle, busy,\n"
       "draining, drained, down) and why, slots,\n"
       "devices, driver, labels",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err).Nodes(call.args.json);
       }},
      {"drain",
       {"NODE"},
       {"reason"},
       "drain NODE --reason TEXT, resume NODE",
       "stop placing runs on a node (what it runs\n"
       "finishes), and start again (admin only)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Drain(call.args.positional[0], call.args.reason);
       }},
      {"resume",
       {"NODE"},
       {},
       "",
       "",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Resume(call.args.positional[0]);
       }},
      {kMaintenanceCommand,
       {"[start|end]"},
       {"json", "for", "reason?"},
       "maintenance [--json]\n"
       "maintenance start --for DURATION [--reason TEXT]\n"
       "maintenance end",
       "show, start (for 30m, 2h, ...; at most 7\n"
       "days) or end the coordinator's maintenance\n"
       "window: until its end, agents cut off from\n"
       "a stopped hpcai500d keep their workers, and\n"
       "no node is lost for silence (admin only)",
       [](const CommandCall& call) {
         Commands commands(call.client, call.out, call.err);
         if (call.args.positional.empty()) {
           return commands.Maintenance(call.args.json);
         }
         return commands.SetMaintenance(call.args.maintenance_ms,
                                        call.args.reason);
       }},
      {"queues",
       {},
       {"json"},
       "queues [--json]",
       "the queues: nodes, runs, priorities",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Queues(call.args.json);
       }},
      {"check",
       {"NODE"},
       {"timeout", "json"},
       "check NODE [--timeout T] [--json]",
       "health check: a noop run pinned to NODE\n"
       "(rendezvous, one all-reduce), one line per\n"
       "phase with its time; T: seconds or 90s, 5m\n"
       "(default 2m; then the run is cancelled)",
       [](const CommandCall& call) {
         return CheckCommand(call.client, call.out)
             .Run(call.args.positional[0], call.args.check);
       }},
      {"invalidate",
       {kRunArg},
       {"reason"},
       "invalidate RUN --reason TEXT",
       "take a succeeded run's result (and its\n"
       "submission) off the leaderboard; the run\n"
       "stays, showing who and why (admin only)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Invalidate(call.args.run_id, call.args.reason);
       }},
      {"audit",
       {},
       {"limit", "json"},
       "audit [--limit K] [--json]",
       "the newest K (default 100) audited calls:\n"
       "who did what, from where, allowed or not;\n"
       "and failed TLS handshakes (admin tokens only)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Audit(call.args.limit, call.args.json);
       }},
      {"leaderboard",
       {},
       {"workload", "config", "limit", "offset", "json"},
       "leaderboard [--workload W] [--config C] [--limit K] [--offset N]\n"
       "            [--json]",
       "submissions ranked by Valid FLOPS; a page\n"
       "of K rows after the first N (default all)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .Leaderboard(LeaderboardPage(call.args), call.args.json);
       }},
      {"history",
       {},
       {"user", "state", "since", "until", "name", "queue", "limit", "json"},
       "history [--user U] [--state S] [--since T] [--until T] [--name N]\n"
       "        [--queue Q] [--limit K] [--json]",
       "accounting, like sacct: the newest K\n"
       "(default 100) runs submitted in [since,\n"
       "until) with queue, nodes, times, elapsed,\n"
       "node-hours (and those an aborted run gave\n"
       "back), attempts and why each ended; T:\n"
       "YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] (UTC) or\n"
       "a time ago: 30m, 2h, 7d, 1w",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .History(RunsFilter(call.args), call.args.json);
       }},
      {"regress",
       {kSpecArg},
       {"baseline", "window", "min-history", "tolerance", "max-cv", "reference",
        "metric", "json", "json-file", "junit", "markdown"},
       "regress SPEC|SUITE [--baseline last-good|RUN|FILE] [--window N]\n"
       "        [--min-history K] [--tolerance PCT] [--max-cv PCT]\n"
       "        [--reference METRIC=VALUE]... [--metric M]... [--json]\n"
       "        [--json-file FILE] [--junit FILE] [--markdown FILE]",
       "submit --wait, then judge each spec's\n"
       "metrics against its baseline: the promoted\n"
       "run (baseline promote), else the median of\n"
       "the newest N (default 10) good runs of the\n"
       "same name and shape; or the newest good\n"
       "one, run RUN, a --json-file FILE, fixed\n"
       "VALUEs. The band is learned from those N\n"
       "runs (robust z-score: 3 x 1.4826 x MAD, at\n"
       "least 2%); with fewer than K (default 5)\n"
       "it is PCT% (default 5). A move outside the\n"
       "band in the bad direction regresses, and so\n"
       "does missing a target the baseline reached.\n"
       "A spec with repetitions reports their\n"
       "spread (CV); above --max-cv (default 2%,\n"
       "the leaderboard's) throughput is marked\n"
       "unrepeatable: a move within it is noise.\n"
       "M: throughput, flops, valid_flops, quality,\n"
       "time_to_target (default all but flops).\n"
       "--json: the report on stdout, the live log\n"
       "on stderr; --junit: JUnit XML; --markdown:\n"
       "a summary for CI",
       [](const CommandCall& call) {
         return RegressCommand(call.client, call.out, call.err)
             .Run(call.spec_source, call.spec_yaml, call.args.regress,
                  call.args.json);
       }},
      {"baseline",
       {"promote", kRunArg},
       {},
       "baseline promote RUN",
       "make a succeeded run the regress baseline of\n"
       "its series (your own runs; an admin's any)",
       [](const CommandCall& call) {
         return Commands(call.client, call.out, call.err)
             .PromoteBaseline(call.args.run_id);
       }},
      {kHelpCommand, {}, {}, "", "", nullptr},
  };
  return *kCommands;
}

const CliCommand* FindCliCommand(absl::string_view name) {
  for (const CliCommand& command : CliCommands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

namespace {

constexpr char kGlobalFlags[] =
    "usage: hpcai500 [--coordinator HOST:PORT]\n"
    "                [--token-file FILE | --token TOKEN] [--tls-ca FILE]\n"
    "       hpcai500 --version\n";

}  // namespace

std::string CommandUsageText(const CliCommand& command) {
  const std::vector<CliCommand>& commands = CliCommands();
  // A row without lines (release) is described by the row before (hold).
  const CliCommand* described = &command;
  while (described->synopsis.empty() && described != &commands.front()) {
    --described;
  }
  return absl::StrCat(kGlobalFlags, "                ", command.name,
                      " ...\n\n", UsageLines(*described),
                      "\n(hpcai500 --help: every command and the exit "
                      "codes)\n");
}

std::string UsageText() {
  return absl::StrCat(
      kGlobalFlags,
      "                COMMAND [ARGS]\n"
      "\n"
      "commands:\n",
      CommandLines(),
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
      "exit codes (submit --wait, sweep --wait, watch): 0 reached the target\n"
      "quality, 1 finished below it, 2 failed, cancelled or aborted (or any\n"
      "error), 3 spec refused; 64 bad command line, 66 unreadable file, 75 no\n"
      "answer from the coordinator after every retry (submit again with\n"
      "--request-id).\n"
      "exit codes (check): 0 healthy, 2 unhealthy (the node is unknown, down,\n"
      "drained or draining, or the noop run failed or did not end in time;\n"
      "the output says which) or any error (such as an unreachable\n"
      "coordinator); 64 bad command line, 66 unreadable file.\n"
      "exit codes (regress): 0 no regression (or no baseline yet), 1 a metric\n"
      "regressed, 2 the run failed or was cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n");
}

}  // namespace hpcai500
