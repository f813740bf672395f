#include "cli/check.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/commands.h"
#include "common/registry.h"
#include "common/run_state.h"
#include "common/spec.h"
#include "common/vocabulary.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// The node states (server/coordinator.cc, as sinfo) in which a node takes
// no new run.
bool TakesNoRuns(const std::string& state) {
  return state == "down" || state == "drained" || state == "draining";
}

// "0.123 s", or "-" for a phase not reached.
std::string Seconds(double seconds) {
  return seconds < 0 ? "-" : absl::StrFormat("%.3f s", seconds);
}

nlohmann::ordered_json SecondsOrNull(double seconds) {
  return seconds < 0 ? nlohmann::ordered_json(nullptr)
                     : nlohmann::ordered_json(seconds);
}

double SecondsBetween(absl::Time from, absl::Time to) {
  return absl::ToDoubleSeconds(to - from);
}

// When the check saw the run placed and its workers launched, on this
// process's clock (the coordinator stamps neither the launch nor, for the
// client, the moment of each report).
struct CheckClock {
  absl::Time placed = absl::InfinitePast();
  absl::Time running = absl::InfinitePast();

  // Notes what `run`, seen at `now`, says happened.
  void Saw(const v1::Run& run, absl::Time now) {
    if (run.attempts_size() == 0) return;
    if (run.state() >= v1::RUN_STATE_STARTING && placed == absl::InfinitePast())
      placed = now;
    if (Launched(run) && running == absl::InfinitePast()) running = now;
  }

  // Whether `run`'s workers were launched: it is running, or it ended
  // with an epoch (a run that fails at its launch goes from starting
  // straight to failed, and must not read as launched).
  static bool Launched(const v1::Run& run) {
    return run.state() == v1::RUN_STATE_RUNNING ||
           (IsTerminal(run.state()) && run.epochs_size() > 0);
  }

  // The phases of *report that `last` (the run's final report, or the last
  // one seen) reached. Durations on different clocks are compared, never
  // instants: queued is the coordinator's (submitted to placed); started is
  // this process's, between the reports that showed the run placed and
  // running (0 when one report showed both); exited is the coordinator's
  // placed to ended, less started.
  void Fill(const v1::Run& last, bool ended, CheckReport* report) const {
    if (last.attempts_size() == 0) return;
    const int64_t placed_ms = last.attempts(0).started_ms();
    report->queued_s = (placed_ms - last.created_ms()) / 1000.0;
    if (running == absl::InfinitePast()) return;
    report->started_s = SecondsBetween(placed, running);
    if (ended && last.finished_ms() > 0) {
      report->exited_s = std::max(
          0.0, (last.finished_ms() - placed_ms) / 1000.0 - report->started_s);
    }
  }
};

}  // namespace

std::string NodeUnavailable(const v1::ListNodesResponse& nodes,
                            const std::string& name) {
  std::vector<std::string> names;
  for (const v1::Node& node : nodes.nodes()) {
    if (node.name() != name) {
      names.push_back(node.name());
      continue;
    }
    if (!TakesNoRuns(node.state())) return "";
    return absl::StrCat("node ", name, " is ", node.state(),
                        node.state_reason().empty() ? "" : ": ",
                        node.state_reason());
  }
  std::sort(names.begin(), names.end());
  return absl::StrCat("unknown node '", name, "' (registered: ",
                      names.empty() ? "none" : absl::StrJoin(names, ", "), ")");
}

CheckLayout CheckLayoutOf(const v1::Node& node) {
  CheckLayout layout;
  layout.ranks = std::max(1, node.slots());
  layout.device = node.gpus() >= layout.ranks ? Device::kCuda : Device::kCpu;
  return layout;
}

std::string CheckSpecYaml(const v1::Node& node) {
  const CheckLayout layout = CheckLayoutOf(node);
  v1::RunSpec spec;
  spec.set_name("check");
  spec.set_workload(kNoopWorkload);
  spec.set_config("noop");
  spec.set_level("system");
  spec.set_nodes(1);
  spec.set_ranks_per_node(layout.ranks);
  spec.set_device(std::string(Name(layout.device)));
  spec.set_batch_size(1);
  spec.set_precision(std::string(Name(Precision::kFp32)));
  spec.set_compression(std::string(Name(Compression::kNone)));
  spec.set_seed(0);
  spec.set_system(absl::StrCat("check of ", node.name()));
  spec.set_epochs(1);
  spec.set_repetitions(1);
  spec.set_max_retries(0);  // a failure is the answer, not a reason to retry
  (*spec.mutable_constraints())[kNodeLabel] = node.name();
  return RunSpecToYaml(spec);
}

std::string CheckLines(const CheckReport& r) {
  const std::string prefix = absl::StrCat("check ", r.node, ": ");
  std::string text;
  auto line = [&](const char* phase, double seconds, const std::string& what) {
    if (seconds < 0) return;
    absl::StrAppendFormat(&text, "%s%-16s %9s  %s\n", prefix, phase,
                          Seconds(seconds), what);
  };
  line("queued", r.queued_s, absl::StrCat("run ", r.run_id, " placed"));
  line("started", r.started_s,
       absl::StrCat(r.ranks, " rank(s) launched on ", r.device));
  line("rendezvous/epoch", r.epoch_s,
       absl::StrCat("joined ", r.device == "cuda" ? "NCCL" : "Gloo",
                    " and all-reduced (worker's clock, slowest rank)"));
  line("exited", r.exited_s, absl::StrCat("run ", r.state));
  if (r.healthy) {
    absl::StrAppendFormat(&text, "%shealthy (%.3f s)\n", prefix, r.total_s);
  } else {
    absl::StrAppend(&text, prefix, "UNHEALTHY: ", r.problem, "\n");
  }
  return text;
}

std::string CheckJson(const CheckReport& r) {
  nlohmann::ordered_json json = {
      {"node", r.node},
      {"healthy", r.healthy},
      {"problem", r.problem},
      {"run_id", r.run_id},
      {"state", r.state},
      {"device", r.device},
      {"ranks", r.ranks},
      {"phases",
       {{"queued_s", SecondsOrNull(r.queued_s)},
        {"started_s", SecondsOrNull(r.started_s)},
        {"rendezvous_epoch_s", SecondsOrNull(r.epoch_s)},
        {"exited_s", SecondsOrNull(r.exited_s)}}},
      {"total_s", r.total_s}};
  return json.dump(2) + "\n";
}

// Declared with the other commands in cli/commands.h.
int Commands::Check(const std::string& name, const CheckOptions& options) {
  const absl::Time start = absl::Now();
  CheckReport report;
  report.node = name;
  auto finish = [&] {
    report.total_s = SecondsBetween(start, absl::Now());
    out_ << (options.json ? CheckJson(report) : CheckLines(report));
    out_.flush();
    return report.healthy ? kExitOk : kExitFailed;
  };

  v1::ListNodesResponse nodes;
  grpc::Status status = Unary(&v1::ClientService::StubInterface::ListNodes,
                              v1::ListNodesRequest(), &nodes);
  if (!status.ok()) return ReportRpcError("check: nodes", status);
  report.problem = NodeUnavailable(nodes, name);
  if (!report.problem.empty()) return finish();
  const v1::Node& node =
      *std::find_if(nodes.nodes().begin(), nodes.nodes().end(),
                    [&](const v1::Node& n) { return n.name() == name; });

  v1::SubmitRequest submit;
  submit.set_spec_yaml(CheckSpecYaml(node));
  v1::SubmitResponse submitted;
  CheckClock clock;
  status = Unary(&v1::ClientService::StubInterface::Submit, submit, &submitted);
  if (!status.ok() || submitted.run_ids_size() != 1) {
    report.problem =
        absl::StrCat("the noop run was refused: ", status.error_message());
    return finish();
  }
  report.run_id = submitted.run_ids(0);
  const CheckLayout layout = CheckLayoutOf(node);
  report.ranks = layout.ranks;
  report.device = std::string(Name(layout.device));

  grpc::ClientContext context;
  Prepare(&context, /*streaming=*/true);
  context.set_deadline(absl::ToChronoTime(start + options.timeout));
  v1::WatchRunRequest watch;
  watch.set_run_id(report.run_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>> reader =
      stub_->WatchRun(&context, watch);
  v1::Run last;
  bool final = false;
  v1::RunUpdate update;
  while (reader->Read(&update)) {
    if (update.has_run()) {
      last = update.run();
      clock.Saw(last, absl::Now());
    }
    final = final || update.final();
  }
  status = reader->Finish();
  clock.Fill(last, final, &report);
  report.state = RunStateName(last.state());
  if (last.epochs_size() > 0) report.epoch_s = last.epochs(0).seconds();
  report.healthy = final && last.state() == v1::RUN_STATE_SUCCEEDED;
  if (report.healthy) return finish();
  if (final) {
    report.problem =
        absl::StrCat("run ", report.run_id, " ", report.state,
                     last.error().empty() ? "" : ": ", last.error());
    return finish();
  }
  // No end within the timeout (or the stream broke): cancel the run so that
  // it does not run later, unobserved.
  v1::CancelRunRequest cancel;
  cancel.set_run_id(report.run_id);
  v1::CancelRunResponse cancelled;
  const grpc::Status cancel_status =
      Unary(&v1::ClientService::StubInterface::CancelRun, cancel, &cancelled);
  report.problem = absl::StrCat(
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
          ? absl::StrCat("no result within ",
                         absl::FormatDuration(options.timeout))
          : absl::StrCat("watching run ", report.run_id,
                         " failed: ", status.error_message()),
      "; last seen ", report.state,
      last.reason().empty() ? "" : absl::StrCat(" (", last.reason(), ")"),
      cancel_status.ok()
          ? absl::StrCat("; run ", report.run_id, " cancelled")
          : absl::StrCat("; cancelling run ", report.run_id,
                         " failed: ", cancel_status.error_message()));
  return finish();
}

}  // namespace hpcai500
