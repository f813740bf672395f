// CheckCommand: `hpcai500 check NODE` over the coordinator
// (cli/commands/check_command.h).
#include "cli/commands/check_command.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/client/exit_codes.h"
#include "common/run_state.h"
#include "common/vocabulary.h"

namespace hpcai500 {
namespace {

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

CheckCommand::CheckCommand(const CommandContext& context)
    : client_(context.client), out_(context.out) {}

int CheckCommand::Run(const std::string& name, const CheckOptions& options) {
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
  grpc::Status status =
      client_.Unary(&v1::ClientService::StubInterface::ListNodes,
                    v1::ListNodesRequest(), &nodes);
  if (!status.ok()) return client_.ReportError("check: nodes", status);
  report.problem = NodeUnavailable(nodes, name);
  if (!report.problem.empty()) return finish();
  const v1::Node& node =
      *std::find_if(nodes.nodes().begin(), nodes.nodes().end(),
                    [&](const v1::Node& n) { return n.name() == name; });
  if (SubmitNoop(node, report)) WatchNoop(start, options.timeout, report);
  return finish();
}

bool CheckCommand::SubmitNoop(const v1::Node& node, CheckReport& report) {
  v1::SubmitRequest submit;
  submit.set_spec_yaml(CheckSpecYaml(node));
  v1::SubmitResponse submitted;
  const grpc::Status status = client_.Submit(&submit, &submitted);
  if (!status.ok() || submitted.run_ids_size() != 1) {
    report.problem =
        absl::StrCat("the noop run was refused: ", status.error_message());
    return false;
  }
  report.run_id = submitted.run_ids(0);
  const CheckLayout layout = CheckLayoutOf(node);
  report.ranks = layout.ranks;
  report.device = std::string(Name(layout.device));
  return true;
}

void CheckCommand::WatchNoop(absl::Time start, absl::Duration timeout,
                             CheckReport& report) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(start + timeout));
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>> reader =
      client_.WatchRun(report.run_id, &context);
  CheckClock clock;
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
  const grpc::Status status = reader->Finish();
  clock.Fill(last, final, &report);
  report.state = RunStateName(last.state());
  if (last.epochs_size() > 0) report.epoch_s = last.epochs(0).seconds();
  report.healthy = final && last.state() == v1::RUN_STATE_SUCCEEDED;
  if (report.healthy) return;
  if (final) {
    report.problem =
        absl::StrCat("run ", report.run_id, " ", report.state,
                     last.error().empty() ? "" : ": ", last.error());
    return;
  }
  const std::string cancelled = CancelUnended(report.run_id);
  report.problem = absl::StrCat(
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
          ? absl::StrCat("no result within ", absl::FormatDuration(timeout))
          : absl::StrCat("watching run ", report.run_id,
                         " failed: ", status.error_message()),
      "; last seen ", report.state,
      last.reason().empty() ? "" : absl::StrCat(" (", last.reason(), ")"),
      cancelled);
}

std::string CheckCommand::CancelUnended(int64_t run_id) {
  v1::CancelRunRequest cancel;
  cancel.set_run_id(run_id);
  v1::CancelRunResponse cancelled;
  const grpc::Status status = client_.Unary(
      &v1::ClientService::StubInterface::CancelRun, cancel, &cancelled);
  return status.ok() ? absl::StrCat("; run ", run_id, " cancelled")
                     : absl::StrCat("; cancelling run ", run_id,
                                    " failed: ", status.error_message());
}

}  // namespace hpcai500
