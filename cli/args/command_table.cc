// The table of `hpcai500` commands: one row per command, and the handler
// each row runs (cli/args/command_table.h).
#include "cli/args/command_table.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/client/exit_codes.h"
#include "cli/commands/bundle_commands.h"
#include "cli/commands/changes.h"
#include "cli/commands/check_command.h"
#include "cli/commands/commands.h"
#include "cli/commands/preflight_command.h"
#include "cli/commands/sweep.h"
#include "cli/commands/watch.h"
#include "cli/regress/regress_command.h"

namespace hpcai500 {
namespace {

// The handlers: each hands the parsed command line to the command that
// runs it.

// The filter that list and history send (each leaves unset what it takes no
// flag for), from their flags.
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

// The page that leaderboard asks for, from its flags.
v1::LeaderboardRequest LeaderboardPage(const CliArgs& args) {
  v1::LeaderboardRequest request;
  request.set_workload(args.workload);
  request.set_config(args.config);
  request.set_limit(args.limit);
  request.set_offset(args.offset);
  return request;
}

int RunSubmit(const CommandCall& call) {
  return RunWatcher(call.context)
      .Submit(call.spec_source, call.spec_yaml, call.args.wait,
              /*runs=*/nullptr, call.args.request_id);
}
int RunSweep(const CommandCall& call) {
  return SubmitSweep(call.context, call.spec_source, call.spec_yaml,
                     call.args.sweep, call.args.wait, call.args.request_id);
}
int RunWatch(const CommandCall& call) {
  return RunWatcher(call.context).Watch(call.args.run_id);
}
int RunList(const CommandCall& call) {
  return Commands(call.context).List(RunsFilter(call.args), call.args.json);
}
int RunShow(const CommandCall& call) {
  return Commands(call.context).Show(call.args.run_id, call.args.json);
}
int RunCancel(const CommandCall& call) {
  return Commands(call.context).Cancel(call.args.run_id);
}
int RunHold(const CommandCall& call) {
  return Commands(call.context).Hold(call.args.run_id, /*hold=*/true);
}
int RunRelease(const CommandCall& call) {
  return Commands(call.context).Hold(call.args.run_id, /*hold=*/false);
}
int RunNodes(const CommandCall& call) {
  return Commands(call.context).Nodes(call.args.json);
}
int RunDrain(const CommandCall& call) {
  return Commands(call.context)
      .Drain(call.args.positional[0], call.args.reason);
}
int RunResume(const CommandCall& call) {
  return Commands(call.context).Resume(call.args.positional[0]);
}
// maintenance shows the window; maintenance start|end sets it.
int RunMaintenance(const CommandCall& call) {
  if (call.args.positional.empty()) {
    return Commands(call.context).Maintenance(call.args.json);
  }
  return Commands(call.context)
      .SetMaintenance(call.args.maintenance_ms, call.args.reason);
}
int RunQueues(const CommandCall& call) {
  return Commands(call.context).Queues(call.args.json);
}
int RunCheck(const CommandCall& call) {
  return CheckCommand(call.context)
      .Run(call.args.positional[0], call.args.check);
}
int RunPreflightCommand(const CommandCall& call) {
  return RunPreflight(call.context, call.args.positional, call.args.queue,
                      call.args.json);
}
int RunInvalidate(const CommandCall& call) {
  return Commands(call.context).Invalidate(call.args.run_id, call.args.reason);
}
int RunAudit(const CommandCall& call) {
  return Commands(call.context).Audit(call.args.limit, call.args.json);
}
int RunLeaderboard(const CommandCall& call) {
  return Commands(call.context)
      .Leaderboard(LeaderboardPage(call.args), call.args.json);
}
int RunHistory(const CommandCall& call) {
  return Commands(call.context).History(RunsFilter(call.args), call.args.json);
}
int RunRegress(const CommandCall& call) {
  return RegressCommand(call.context)
      .Run(call.spec_source, call.spec_yaml, call.args.regress, call.args.json);
}
int RunExport(const CommandCall& call) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(call.args.positional[0], &id) || id <= 0) {
    call.context.err << "hpcai500: export: expected a run id (or with "
                        "--submission a submission id), got '"
                     << call.args.positional[0] << "'\n";
    return kExitUsage;
  }
  return BundleCommands(call.context)
      .Export(id, call.args.submission, call.args.out, call.args.tls);
}
int RunVerify(const CommandCall& call) {
  return BundleCommands(call.context)
      .Verify(call.args.positional[0], call.args.json);
}
int RunReplay(const CommandCall& call) {
  return BundleCommands(call.context).Replay(call.args.positional[0]);
}
int RunChanges(const CommandCall& call) {
  v1::ListChangesRequest request;
  if (!call.args.positional.empty()) request.set_name(call.args.positional[0]);
  request.set_series(call.args.series);
  request.set_since_ms(call.args.since_ms);
  request.set_regressions_only(call.args.regressions_only);
  return ListChangesCommand(call.context, request, call.args.json);
}
int RunPromoteBaseline(const CommandCall& call) {
  return Commands(call.context).PromoteBaseline(call.args.run_id);
}

// A row as written: the arguments and the flags are lists apart by spaces.
struct CommandRow {
  const char* name;
  const char* args;
  const char* flags;
  const char* synopsis;
  const char* description;
  int (*run)(const CommandCall& call);
};

// Every command, in the order the usage lists them.
const CommandRow kCommandRows[] = {
    {"submit", "SPEC", "wait request-id",
     "submit SPEC [--wait] [--request-id ID]",
     "submit a run spec (YAML file, - for stdin)\n"
     "or a suite of specs (suite: NAME + specs:,\n"
     "or documents separated by ---); prints the\n"
     "new run ids; --wait then watches each.\n"
     "Retried while the answer may be lost; the\n"
     "same ID again (a day) prints the first\n"
     "submit's runs instead of storing new ones",
     RunSubmit},
    {"sweep", "SPEC",
     "nodes ranks-per-node precision compression scaling dry-run wait "
     "request-id",
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
     RunSweep},
    {"watch", "RUN", "", "watch RUN", "live log of a run, then its result",
     RunWatch},
    {"list", "", "name workload config state limit json",
     "list [--name N] [--workload W] [--config C] [--state S]\n"
     "     [--limit K] [--json]",
     "the newest K (default 100) runs matching\n"
     "every filter given; S: queued, starting,\n"
     "running, succeeded, failed, cancelled,\n"
     "aborted",
     RunList},
    {"show", "RUN", "json", "show RUN [--json]",
     "one run: spec, attempts and the inventory\n"
     "of their nodes, epochs, the forecast of\n"
     "its quality (early abort), score",
     RunShow},
    {"cancel", "RUN", "", "cancel RUN", "cancel a queued or running run",
     RunCancel},
    {"hold", "RUN", "", "hold RUN, release RUN",
     "keep a queued run from starting, and let it\n"
     "(your own runs; an admin's any)",
     RunHold},
    {"release", "RUN", "", "", "", RunRelease},
    {"nodes", "", "json", "nodes [--json]",
     "the agents' nodes: state (idle, busy,\n"
     "draining, drained, down) and why, slots,\n"
     "devices, driver, labels",
     RunNodes},
    {"drain", "NODE", "reason", "drain NODE --reason TEXT, resume NODE",
     "stop placing runs on a node (what it runs\n"
     "finishes), and start again (admin only)",
     RunDrain},
    {"resume", "NODE", "", "", "", RunResume},
    {kMaintenanceCommand, "[start|end]", "json for reason?",
     "maintenance [--json]\n"
     "maintenance start --for DURATION [--reason TEXT]\n"
     "maintenance end",
     "show, start (for 30m, 2h, ...; at most 7\n"
     "days) or end the coordinator's maintenance\n"
     "window: until its end, agents cut off from\n"
     "a stopped hpcai500d keep their workers, and\n"
     "no node is lost for silence (admin only)",
     RunMaintenance},
    {"queues", "", "json", "queues [--json]",
     "the queues: nodes, runs, priorities", RunQueues},
    {"check", "NODE", "timeout json", "check NODE [--timeout T] [--json]",
     "health check: a noop run pinned to NODE\n"
     "(rendezvous, one all-reduce), one line per\n"
     "phase with its time; T: seconds or 90s, 5m\n"
     "(default 2m; then the run is cancelled)",
     RunCheck},
    {"preflight", "[NODE...]", "queue json",
     "preflight [NODE...] [--queue Q] [--json]",
     "measure nodes now (GEMM, memory, host to\n"
     "device, all-reduce) and flag outliers\n"
     "against their history and class (admin)",
     RunPreflightCommand},
    {"invalidate", "RUN", "reason", "invalidate RUN --reason TEXT",
     "take a succeeded run's result (and its\n"
     "submission) off the leaderboard; the run\n"
     "stays, showing who and why (admin only)",
     RunInvalidate},
    {"audit", "", "limit json", "audit [--limit K] [--json]",
     "the newest K (default 100) audited calls:\n"
     "who did what, from where, allowed or not;\n"
     "and failed TLS handshakes (admin tokens only)",
     RunAudit},
    {"leaderboard", "", "workload config limit offset json",
     "leaderboard [--workload W] [--config C] [--limit K] [--offset N]\n"
     "            [--json]",
     "submissions ranked by Valid FLOPS; a page\n"
     "of K rows after the first N (default all)",
     RunLeaderboard},
    {"history", "", "user state since until name queue limit json",
     "history [--user U] [--state S] [--since T] [--until T] [--name N]\n"
     "        [--queue Q] [--limit K] [--json]",
     "accounting, like sacct: the newest K\n"
     "(default 100) runs submitted in [since,\n"
     "until) with queue, nodes, times, elapsed,\n"
     "node-hours (and those an aborted run gave\n"
     "back), attempts and why each ended; T:\n"
     "YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] (UTC) or\n"
     "a time ago: 30m, 2h, 7d, 1w",
     RunHistory},
    {"regress", "SPEC",
     "baseline window min-history tolerance max-cv reference metric json "
     "json-file junit markdown",
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
     RunRegress},
    {"changes", "[NAME]", "series since regressions-only json",
     "changes [NAME] [--series S] [--since T] [--regressions-only]\n"
     "        [--json]",
     "the change points of every run series (or\n"
     "of spec NAME, or of series S as --json\n"
     "prints it) over throughput, valid_flops,\n"
     "quality, time_to_target and energy, newest\n"
     "first: where each began, its size with a\n"
     "95% interval, step or drift, and which\n"
     "fingerprint fields changed across it (show\n"
     "RUN shows a run's); T as history takes it",
     RunChanges},
    {"baseline", "promote RUN", "", "baseline promote RUN",
     "make a succeeded run the regress baseline of\n"
     "its series (your own runs; an admin's any)",
     RunPromoteBaseline},
    {"export", "ID", "submission out", "export ID [--submission] --out FILE",
     "the signed result bundle of run ID (of\n"
     "submission ID with --submission): spec,\n"
     "MLLOG of every rank, inventories, score\n"
     "and convergence references, with SHA-256\n"
     "digests signed by the coordinator's site\n"
     "key (hpcai500d site-key create)",
     RunExport},
    {"verify", "FILE", "json", "verify FILE [--json]",
     "check a bundle offline, one line per check:\n"
     "signature, digests, MLCommons' MLLOG rules,\n"
     "FLOPS and Valid FLOPS recomputed from the\n"
     "MLLOG, convergence; exit 0 only if all hold",
     RunVerify},
    {"replay", "FILE", "", "replay FILE",
     "submit a verified bundle's spec here, wait,\n"
     "and print both results side by side with\n"
     "the ratio",
     RunReplay},
    {kHelpCommand, "", "", "", "", nullptr},
};

// The words of a list apart by spaces.
std::vector<std::string> Words(const char* list) {
  return absl::StrSplit(list, ' ', absl::SkipEmpty());
}

}  // namespace

const std::vector<CliCommand>& CliCommands() {
  static const auto* const kCommands = [] {
    auto* commands = new std::vector<CliCommand>;
    for (const CommandRow& row : kCommandRows) {
      commands->push_back({row.name, Words(row.args), Words(row.flags),
                           row.synopsis, row.description, row.run});
    }
    return commands;
  }();
  return *kCommands;
}

const CliCommand* FindCliCommand(absl::string_view name) {
  for (const CliCommand& command : CliCommands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

}  // namespace hpcai500
