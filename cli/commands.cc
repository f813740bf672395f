#include "cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/format.h"
#include "cli/history.h"
#include "cli/regress_report.h"
#include "common/json.h"
#include "common/run_state.h"
#include "common/suite.h"

namespace hpcai500 {
namespace {

// ListRunsPaged asks for at most this many runs at a time: a page stays far
// below gRPC's default 4 MiB message limit.
constexpr int kListPageSize = 100;
// What `list` shows without --limit (the coordinator's default too).
constexpr int kDefaultListLimit = 100;
// LeaderboardPaged asks for at most this many rows at a time: a whole board
// of tens of thousands of submissions would pass gRPC's 4 MiB message limit.
constexpr int kLeaderboardPageSize = 1000;

// The message as indented JSON with proto field names; false on failure.
bool PrintJson(const google::protobuf::Message& message, std::ostream& out,
               std::ostream& err) {
  absl::StatusOr<std::string> json = ProtoToJson(message, /*indent=*/true);
  if (!json.ok()) {
    err << "hpcai500: " << json.status().message() << "\n";
    return false;
  }
  out << *json;
  if (json->empty() || json->back() != '\n') out << "\n";
  return true;
}

std::string RankText(const v1::LeaderboardRow& row) {
  return row.ranked() && row.rank() > 0 ? absl::StrCat(row.rank()) : "-";
}

std::string SpecLayout(const v1::RunSpec& spec) {
  return absl::StrFormat("%d node%s x %d rank%s, %s, batch %d/rank, %s",
                         spec.nodes(), spec.nodes() == 1 ? "" : "s",
                         spec.ranks_per_node(),
                         spec.ranks_per_node() == 1 ? "" : "s", spec.device(),
                         spec.batch_size(), spec.precision());
}

// The attempt history: where each ran, where it started from and why it
// ended (Slurm's requeue history, a Job's pod list).
std::string AttemptTable(const v1::Run& run, absl::TimeZone zone) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Attempt& a : run.attempts()) {
    std::string start = "epoch 1";
    if (a.resumed_epoch() > 0) {
      start = absl::StrFormat("resumed after epoch %d (attempt %d)",
                              a.resumed_epoch(), a.resume_from_attempt());
    } else if (a.resume_from_epoch() > 0) {
      start = absl::StrFormat("asked to resume after epoch %d",
                              a.resume_from_epoch());
    }
    rows.push_back({absl::StrCat(a.number()), a.state(),
                    absl::StrJoin(a.nodes(), ","),
                    FormatTimeMs(a.started_ms(), zone), start,
                    a.error().empty() ? "-" : a.error()});
  }
  return FormatTable(
      {"attempt", "state", "nodes", "started", "start", "ended by"}, rows,
      /*right_aligned=*/{0});
}

// Quality against target, FLOPS and Valid FLOPS, one indented line each.
std::string ScoreSummary(const v1::Score& score) {
  return absl::StrCat(
      "  quality      ", FormatQualityVsTarget(score.quality(), score.target()),
      " (", score.reached_target() ? "reached" : "below target", ")\n",
      "  FLOPS        ", FormatFlops(score.flops()), "\n", "  Valid FLOPS  ",
      FormatFlops(score.valid_flops()), " (n = ", score.exponent(), ")\n");
}

// Energy of the training epochs, the average power it means, and Valid FLOPS
// per watt (HPC AI500 V2.0); for a score with energy_joules > 0.
std::string EnergySummary(const v1::Score& score) {
  std::string text =
      absl::StrFormat("  energy       %.1f J", score.energy_joules());
  if (score.train_seconds() > 0) {
    absl::StrAppendFormat(&text, " (%.1f W average over %.2f s)",
                          score.energy_joules() / score.train_seconds(),
                          score.train_seconds());
  }
  absl::StrAppend(&text, "\n  per watt     ",
                  FormatFlops(score.valid_flops_per_watt()),
                  "/W (Valid FLOPS / average power)\n");
  return text;
}

// A node's state (idle, busy, draining, drained, down) where the
// coordinator says, else whether its agent is connected.
std::string NodeStateText(const v1::Node& node) {
  if (!node.state().empty()) return node.state();
  return node.connected() ? "connected" : "gone";
}

// What each attempt's nodes were when it was placed (provenance), one line
// per attempt and node, under a "provenance" heading.
// Empty when no attempt kept an inventory.
std::string ProvenanceLines(const v1::Run& run) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Attempt& attempt : run.attempts()) {
    // In the attempt's node order (the map is unordered).
    for (const std::string& node : attempt.nodes()) {
      auto it = attempt.inventory().find(node);
      if (it == attempt.inventory().end()) continue;
      rows.push_back(
          {absl::StrCat(attempt.number()), node, FormatInventory(it->second)});
    }
  }
  if (rows.empty()) return "";
  return absl::StrCat("\nprovenance\n",
                      FormatTable({"attempt", "node", "inventory"}, rows,
                                  /*right_aligned=*/{0}));
}

// Why a submission's runs cannot be compared, or "" when each of them
// succeeded with a score.
std::string UnscoredRunError(const std::vector<v1::Run>& runs) {
  for (const v1::Run& run : runs) {
    if (ExitCodeForRun(run) != kExitFailed) continue;
    switch (run.state()) {
      case v1::RUN_STATE_SUCCEEDED:
        return absl::StrCat("run ", run.id(), " succeeded without a score");
      case v1::RUN_STATE_FAILED:
      case v1::RUN_STATE_CANCELLED:
        return absl::StrCat("run ", run.id(), " ", RunStateName(run.state()),
                            run.error().empty() ? "" : ": ", run.error());
      default:
        return absl::StrCat("run ", run.id(), " did not finish (last seen ",
                            RunStateName(run.state()), ")");
    }
  }
  return "";
}

// Writes `text` to `path`, replacing it; false with errno set on failure.
bool WriteTextFile(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int write_errno = errno;
  if (std::fclose(file) != 0) return false;
  errno = write_errno;
  return written;
}

}  // namespace

int ExitCodeForRun(const v1::Run& run) {
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.has_score()) {
    return kExitFailed;
  }
  return run.score().reached_target() ? kExitOk : kExitBelowTarget;
}

Commands::Commands(v1::ClientService::StubInterface* stub,
                   CommandOptions options, std::ostream& out, std::ostream& err)
    : stub_(stub), options_(std::move(options)), out_(out), err_(err) {}

void Commands::Prepare(grpc::ClientContext* context, bool streaming) const {
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
  if (!streaming) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(options_.rpc_timeout));
  }
}

int Commands::ReportRpcError(const char* what,
                             const grpc::Status& status) const {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    err_ << "hpcai500: " << what << ": cannot reach the coordinator at "
         << options_.coordinator << ": " << status.error_message() << "\n";
  } else {
    err_ << "hpcai500: " << what << ": coordinator " << options_.coordinator
         << " answered: " << status.error_message() << "\n";
  }
  return kExitFailed;
}

int Commands::Submit(const std::string& spec_source,
                     const std::string& spec_yaml, bool wait) {
  std::vector<v1::Run> runs;
  return SubmitAndWatch(spec_source, spec_yaml, wait, runs);
}

int Commands::SubmitAndWatch(const std::string& spec_source,
                             const std::string& spec_yaml, bool wait,
                             std::vector<v1::Run>& runs) {
  v1::SubmitRequest request;
  request.set_spec_yaml(spec_yaml);
  v1::SubmitResponse response;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::Submit, request, &response);
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
      status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
    // A bad spec, or a run the registered nodes could never hold.
    err_ << "hpcai500: spec " << spec_source
         << " refused: " << status.error_message() << "\n";
    return kExitRefused;
  }
  if (!status.ok()) return ReportRpcError("submit", status);
  if (!response.suite().empty()) {
    err_ << "suite " << response.suite() << ": "
         << response.submission_ids_size() << " submissions, "
         << response.run_ids_size() << " runs\n";
  }
  for (int64_t run_id : response.run_ids()) out_ << run_id << "\n";
  out_.flush();
  if (!wait) return kExitOk;
  int worst = kExitOk;
  for (int64_t run_id : response.run_ids()) {
    worst = std::max(worst, WatchUntilEnd(run_id, runs.emplace_back()));
  }
  return worst;
}

int Commands::Watch(int64_t run_id) {
  v1::Run last;
  return WatchUntilEnd(run_id, last);
}

int Commands::WatchUntilEnd(int64_t run_id, v1::Run& last) {
  last.set_id(run_id);
  grpc::ClientContext context;
  Prepare(&context, /*streaming=*/true);
  v1::WatchRunRequest request;
  request.set_run_id(run_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>> reader =
      stub_->WatchRun(&context, request);
  v1::RunUpdate update;
  bool seen_any = false;
  bool final = false;
  while (reader->Read(&update)) {
    // An update's log lines are what happened up to its snapshot of the run:
    // they come before the state they led to (a watch that begins after the
    // run was placed gets "queued: ..." in the log and state STARTING).
    for (const std::string& line : update.log()) out_ << line << "\n";
    if (update.has_run()) {
      if (!seen_any || update.run().state() != last.state()) {
        out_ << "run " << run_id << ": " << RunStateName(update.run().state())
             << "\n";
      }
      last = update.run();
      seen_any = true;
    }
    out_.flush();
    if (update.final()) final = true;
  }
  grpc::Status status = reader->Finish();
  if (final && seen_any) {
    PrintResult(last);
    return ExitCodeForRun(last);
  }
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("watch run ", run_id).c_str(), status);
  }
  err_ << "hpcai500: watch run " << run_id << ": coordinator "
       << options_.coordinator << " closed the stream before the run ended\n";
  return kExitFailed;
}

void Commands::PrintResult(const v1::Run& run) const {
  out_ << "run " << run.id() << " " << RunStateName(run.state());
  if (!run.error().empty()) out_ << ": " << run.error();
  out_ << "\n";
  if (!run.has_score()) return;
  out_ << ScoreSummary(run.score());
  out_.flush();
}

grpc::Status Commands::ListRunsPaged(
    v1::ListRunsRequest filter,
    const std::function<bool(v1::Run)>& take) const {
  int remaining = filter.limit();  // 0: no bound
  while (true) {
    v1::ListRunsRequest page = filter;
    page.set_limit(remaining > 0 ? std::min(remaining, kListPageSize)
                                 : kListPageSize);
    v1::ListRunsResponse response;
    grpc::Status status =
        Unary(&v1::ClientService::StubInterface::ListRuns, page, &response);
    if (!status.ok()) return status;
    const int count = response.runs_size();
    if (count == 0) return grpc::Status::OK;
    const int64_t oldest_id = response.runs(count - 1).id();
    for (v1::Run& run : *response.mutable_runs()) {
      if (!take(std::move(run))) return grpc::Status::OK;
    }
    if (count < page.limit()) return grpc::Status::OK;  // the last page
    if (remaining > 0 && (remaining -= count) == 0) return grpc::Status::OK;
    filter.set_before_id(oldest_id);
  }
}

int Commands::List(const v1::ListRunsRequest& filter) {
  v1::ListRunsRequest bounded = filter;
  if (bounded.limit() <= 0) bounded.set_limit(kDefaultListLimit);
  std::vector<std::vector<std::string>> rows;
  grpc::Status status = ListRunsPaged(bounded, [&](v1::Run run) {
    rows.push_back({absl::StrCat(run.id()), run.spec().name(),
                    run.spec().workload() + "/" + run.spec().config(),
                    RunStateName(run.state()),
                    run.user().empty() ? "-" : run.user(),
                    FormatTimeMs(run.created_ms(), options_.time_zone)});
    return true;
  });
  if (!status.ok()) return ReportRpcError("list", status);
  out_ << FormatTable(
      {"id", "name", "workload/config", "state", "user", "created"}, rows,
      /*right_aligned=*/{0});
  return kExitOk;
}

grpc::Status Commands::GetRun(int64_t run_id, v1::Run* run) const {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return Unary(&v1::ClientService::StubInterface::GetRun, request, run);
}

int Commands::Show(int64_t run_id, bool json) {
  v1::Run run;
  grpc::Status status = GetRun(run_id, &run);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("show run ", run_id).c_str(), status);
  }
  if (json) return PrintJson(run, out_, err_) ? kExitOk : kExitFailed;

  const v1::RunSpec& spec = run.spec();
  const absl::TimeZone zone = options_.time_zone;
  out_ << "run " << run.id() << " (submission " << run.submission_id()
       << ", repetition " << run.repetition()
       << "): " << RunStateName(run.state()) << "\n"
       << "  name         " << spec.name() << "\n"
       << "  workload     " << spec.workload() << "/" << spec.config() << "\n"
       << "  level        " << spec.level() << ", "
       << (spec.ranked() ? "ranked" : "unranked") << "\n"
       << "  system       " << spec.system() << "\n"
       << "  user         " << (run.user().empty() ? "-" : run.user()) << "\n"
       << "  layout       " << SpecLayout(spec) << "\n"
       << "  launcher     "
       << (spec.launcher().empty() ? "agent" : spec.launcher()) << "\n"
       << "  queue        " << (run.queue().empty() ? "default" : run.queue())
       << ", priority " << run.priority()
       << (spec.time_limit_s() > 0
               ? absl::StrCat(
                     ", time limit ",
                     absl::FormatDuration(absl::Seconds(spec.time_limit_s())))
               : std::string())
       << "\n"
       << "  seed         " << spec.seed() << "\n"
       << "  epochs       " << spec.epochs() << "\n"
       << "  created      " << FormatTimeMs(run.created_ms(), zone) << "\n"
       << "  started      " << FormatTimeMs(run.started_ms(), zone) << "\n"
       << "  finished     " << FormatTimeMs(run.finished_ms(), zone) << "\n";
  if (!run.error().empty()) out_ << "  error        " << run.error() << "\n";
  if (!run.reason().empty()) out_ << "  waiting      " << run.reason() << "\n";
  if (!run.invalidated_by().empty()) {
    out_ << "  invalidated  by " << run.invalidated_by() << " at "
         << FormatTimeMs(run.invalidated_ms(), zone) << ": "
         << run.invalidation_reason() << " (not on the leaderboard)\n";
  }
  if (run.attempts_size() > 1 ||
      (run.attempts_size() == 1 && !run.attempts(0).error().empty())) {
    out_ << "\n" << AttemptTable(run, zone);
  }
  out_ << ProvenanceLines(run);
  if (run.epochs_size() > 0) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::EpochSummary& epoch : run.epochs()) {
      rows.push_back(
          {absl::StrCat(epoch.epoch()), absl::StrCat(epoch.samples()),
           absl::StrFormat("%.2f", epoch.seconds()),
           absl::StrFormat("%.1f", epoch.throughput()),
           absl::StrFormat("%.4f", epoch.train_loss()),
           epoch.accuracy() < 0 ? std::string("-")
                                : absl::StrFormat("%.4f", epoch.accuracy())});
    }
    out_ << "\n"
         << FormatTable(
                {"epoch", "samples", "seconds", "samples/s", "loss", "quality"},
                rows, /*right_aligned=*/{0, 1, 2, 3, 4, 5});
  }
  if (run.has_score()) {
    const v1::Score& score = run.score();
    out_ << "\nscore\n"
         << ScoreSummary(score) << "  samples      " << score.samples() << "\n"
         << "  forward      "
         << absl::StrFormat("%.4g", score.forward_flops_per_sample())
         << " FLOPs/sample\n"
         << "  train time   " << absl::StrFormat("%.2f", score.train_seconds())
         << " s (evaluation " << absl::StrFormat("%.2f", score.eval_seconds())
         << " s)\n"
         << "  convention   " << score.convention() << "\n";
    if (score.lost_seconds() > 0) {
      out_ << "  lost time    " << absl::StrFormat("%.2f", score.lost_seconds())
           << " s of earlier attempts after their last checkpoint (not in "
              "train time)\n";
    }
    if (score.energy_joules() > 0) out_ << EnergySummary(score);
  }
  return kExitOk;
}

int Commands::Cancel(int64_t run_id) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  v1::CancelRunResponse response;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::CancelRun, request, &response);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("cancel run ", run_id).c_str(), status);
  }
  out_ << "run " << run_id << ": " << RunStateName(response.state()) << "\n";
  return kExitOk;
}

int Commands::Nodes(bool json) {
  v1::ListNodesResponse response;
  grpc::Status status = Unary(&v1::ClientService::StubInterface::ListNodes,
                              v1::ListNodesRequest(), &response);
  if (!status.ok()) return ReportRpcError("nodes", status);
  if (json) return PrintJson(response, out_, err_) ? kExitOk : kExitFailed;
  const bool any_reason = std::any_of(
      response.nodes().begin(), response.nodes().end(),
      [](const v1::Node& node) { return !node.state_reason().empty(); });
  std::vector<std::vector<std::string>> rows;
  for (const v1::Node& node : response.nodes()) {
    // Labels sorted so the output is stable (the map is unordered).
    std::vector<std::string> labels;
    for (const auto& [key, value] : node.labels()) {
      labels.push_back(absl::StrCat(key, "=", value));
    }
    std::sort(labels.begin(), labels.end());
    const std::string& driver = node.inventory().driver_version();
    std::vector<std::string> row = {
        node.name(),
        node.address(),
        absl::StrCat(node.used_slots(), "/", node.slots()),
        absl::StrCat(node.cpus()),
        absl::StrCat(node.gpus()),
        NodeStateText(node),
        FormatDevices(node.inventory()),
        driver.empty() ? "-" : driver,
        FormatTimeMs(node.last_seen_ms(), options_.time_zone),
        labels.empty() ? "-" : absl::StrJoin(labels, ",")};
    if (any_reason) {
      row.push_back(node.state_reason().empty() ? "-" : node.state_reason());
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {
      "name",  "address", "slots",  "cpus",      "gpus",
      "state", "devices", "driver", "last seen", "labels"};
  if (any_reason) header.push_back("reason");
  out_ << FormatTable(header, rows, /*right_aligned=*/{2, 3, 4});
  return kExitOk;
}

int Commands::Hold(int64_t run_id, bool hold) {
  v1::Run run;
  grpc::Status status;
  if (hold) {
    v1::HoldRunRequest request;
    request.set_run_id(run_id);
    status = Unary(&v1::ClientService::StubInterface::HoldRun, request, &run);
  } else {
    v1::ReleaseRunRequest request;
    request.set_run_id(run_id);
    status =
        Unary(&v1::ClientService::StubInterface::ReleaseRun, request, &run);
  }
  const std::string verb = hold ? "hold" : "release";
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat(verb, " run ", run_id).c_str(), status);
  }
  out_ << "run " << run_id << ": "
       << (hold ? absl::StrCat("held by ", run.held_by())
                : std::string("released"))
       << " (" << RunStateName(run.state()) << ")\n";
  return kExitOk;
}

int Commands::Drain(const std::string& name, const std::string& reason) {
  v1::DrainNodeRequest request;
  request.set_name(name);
  request.set_reason(reason);
  v1::Node node;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::DrainNode, request, &node);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("drain node ", name).c_str(), status);
  }
  out_ << "node " << node.name() << ": " << node.state() << " ("
       << node.state_reason() << ")\n";
  return kExitOk;
}

int Commands::Resume(const std::string& name) {
  v1::ResumeNodeRequest request;
  request.set_name(name);
  v1::Node node;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::ResumeNode, request, &node);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("resume node ", name).c_str(), status);
  }
  out_ << "node " << node.name() << ": " << node.state() << "\n";
  return kExitOk;
}

int Commands::Queues(bool json) {
  v1::ListQueuesResponse response;
  grpc::Status status = Unary(&v1::ClientService::StubInterface::ListQueues,
                              v1::ListQueuesRequest(), &response);
  if (!status.ok()) return ReportRpcError("queues", status);
  if (json) return PrintJson(response, out_, err_) ? kExitOk : kExitFailed;
  std::vector<std::vector<std::string>> rows;
  for (const v1::Queue& queue : response.queues()) {
    std::vector<std::string> labels;
    for (const auto& [key, value] : queue.node_labels()) {
      labels.push_back(absl::StrCat(key, "=", value));
    }
    std::sort(labels.begin(), labels.end());
    rows.push_back(
        {absl::StrCat(queue.name(), queue.is_default() ? "*" : ""),
         absl::StrCat(queue.idle_nodes(), "/", queue.nodes()),
         absl::StrCat(queue.queued_runs()), absl::StrCat(queue.running_runs()),
         absl::StrCat(queue.priority(), "/", queue.max_priority()),
         queue.max_time_limit_s() > 0
             ? absl::FormatDuration(absl::Seconds(queue.max_time_limit_s()))
             : "-",
         labels.empty() ? "(every node)" : absl::StrJoin(labels, ",")});
  }
  out_ << FormatTable({"queue", "idle/nodes", "queued", "running",
                       "priority/max", "max time", "nodes labelled"},
                      rows, /*right_aligned=*/{1, 2, 3, 4});
  return kExitOk;
}

int Commands::Invalidate(int64_t run_id, const std::string& reason) {
  v1::InvalidateRunRequest request;
  request.set_run_id(run_id);
  request.set_reason(reason);
  v1::Run run;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::InvalidateRun, request, &run);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("invalidate run ", run_id).c_str(),
                          status);
  }
  out_ << "run " << run.id() << ": result invalidated by "
       << run.invalidated_by() << "; off the leaderboard\n";
  return kExitOk;
}

int Commands::Audit(int limit, bool json) {
  v1::ListAuditRequest request;
  request.set_limit(limit);
  v1::ListAuditResponse response;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::ListAudit, request, &response);
  if (!status.ok()) return ReportRpcError("audit", status);
  if (json) return PrintJson(response, out_, err_) ? kExitOk : kExitFailed;
  std::vector<std::vector<std::string>> rows;
  for (const v1::AuditEntry& e : response.entries()) {
    rows.push_back({FormatTimeMs(e.time_ms(), options_.time_zone),
                    e.user().empty() ? "-" : e.user(),
                    e.role().empty() ? "-" : e.role(), e.action(), e.target(),
                    e.peer(), e.allowed() ? "allowed" : "refused",
                    e.detail().empty() ? "-" : e.detail()});
  }
  out_ << FormatTable(
      {"time", "user", "role", "action", "target", "from", "verdict", "detail"},
      rows, /*right_aligned=*/{});
  return kExitOk;
}

grpc::Status Commands::LeaderboardPaged(const v1::LeaderboardRequest& request,
                                        v1::LeaderboardResponse* board) const {
  v1::LeaderboardRequest page = request;
  int remaining = request.limit();  // 0: every row
  while (true) {
    page.set_limit(remaining > 0 ? std::min(remaining, kLeaderboardPageSize)
                                 : kLeaderboardPageSize);
    v1::LeaderboardResponse response;
    grpc::Status status =
        Unary(&v1::ClientService::StubInterface::Leaderboard, page, &response);
    if (!status.ok()) return status;
    board->set_total(response.total());
    const int count = response.rows_size();
    for (v1::LeaderboardRow& row : *response.mutable_rows()) {
      *board->add_rows() = std::move(row);
    }
    if (count < page.limit()) return grpc::Status::OK;  // the last page
    if (remaining > 0 && (remaining -= count) == 0) return grpc::Status::OK;
    page.set_offset(page.offset() + count);
  }
}

int Commands::Leaderboard(const v1::LeaderboardRequest& request, bool json) {
  v1::LeaderboardResponse response;
  grpc::Status status = LeaderboardPaged(request, &response);
  if (!status.ok()) return ReportRpcError("leaderboard", status);
  if (json) return PrintJson(response, out_, err_) ? kExitOk : kExitFailed;
  if (response.rows_size() == 0) {
    if (response.total() > 0) {
      out_ << "no rows after the first " << request.offset() << " (of "
           << response.total() << ")\n";
    } else {
      out_ << "no results yet\n";
    }
    return kExitOk;
  }
  // Workloads are ranked apart: one table each, never one mixed ordering.
  std::vector<std::string> workloads;
  std::map<std::string, std::vector<std::vector<std::string>>> tables;
  for (const v1::LeaderboardRow& row : response.rows()) {
    auto [it, added] = tables.try_emplace(row.workload());
    if (added) workloads.push_back(row.workload());
    it->second.push_back({RankText(row), row.system(), row.name(), row.config(),
                          FormatFlops(row.valid_flops()),
                          FormatQualityVsTarget(row.quality(), row.target()),
                          absl::StrCat(row.runs()),
                          row.ranked() ? "ranked" : "unranked"});
  }
  for (size_t i = 0; i < workloads.size(); ++i) {
    if (workloads.size() > 1) {
      out_ << (i > 0 ? "\n" : "") << workloads[i] << "\n";
    }
    out_ << FormatTable({"rank", "system", "name", "config", "Valid FLOPS",
                         "quality / target", "runs", "status"},
                        tables[workloads[i]], /*right_aligned=*/{0, 4, 5, 6});
  }
  if (response.rows_size() < response.total()) {
    out_ << "\nrows " << request.offset() + 1 << "-"
         << request.offset() + response.rows_size() << " of "
         << response.total() << " (--offset, --limit)\n";
  }
  return kExitOk;
}

int Commands::History(const v1::ListRunsRequest& filter, bool json) {
  v1::ListRunsRequest bounded = filter;
  if (bounded.limit() <= 0) bounded.set_limit(kDefaultListLimit);
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  std::vector<HistoryRow> rows;
  grpc::Status status = ListRunsPaged(bounded, [&](v1::Run run) {
    rows.push_back(HistoryRowOf(run, now_ms));
    return true;
  });
  if (!status.ok()) return ReportRpcError("history", status);
  out_ << (json ? HistoryJson(rows)
                : FormatHistoryTable(rows, options_.time_zone));
  return kExitOk;
}

bool Commands::ReadBaselineRun(int64_t run_id, std::vector<v1::Run>& baseline) {
  v1::Run run;
  grpc::Status status = GetRun(run_id, &run);
  if (!status.ok()) {
    ReportRpcError(absl::StrCat("baseline run ", run_id).c_str(), status);
    return false;
  }
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.has_score()) {
    err_ << "hpcai500: baseline run " << run_id << " is "
         << RunStateName(run.state())
         << (run.state() == v1::RUN_STATE_SUCCEEDED ? " without a score" : "")
         << "; a baseline must be a finished run with a score\n";
    return false;
  }
  if (!run.invalidated_by().empty()) {
    err_ << "hpcai500: baseline run " << run_id
         << "'s result was invalidated by " << run.invalidated_by() << " ("
         << run.invalidation_reason() << "); it cannot be a baseline\n";
    return false;
  }
  baseline.push_back(std::move(run));
  return true;
}

bool Commands::ReadRegressSeries(const std::vector<v1::Run>& runs, int window,
                                 std::vector<v1::Run>& series) {
  const v1::RunSpec& spec = runs.front().spec();
  v1::ListRunsRequest filter;
  filter.set_name(spec.name());
  filter.set_workload(spec.workload());
  filter.set_config(spec.config());
  filter.set_state(v1::RUN_STATE_SUCCEEDED);
  // The baseline never holds the runs it judges, nor later ones.
  filter.set_before_id(std::min_element(runs.begin(), runs.end(),
                                        [](const v1::Run& a, const v1::Run& b) {
                                          return a.id() < b.id();
                                        })
                           ->id());
  std::vector<v1::Run> candidates;
  grpc::Status status = ListRunsPaged(filter, [&](v1::Run run) {
    if (IsGoodSeriesRun(run, spec)) candidates.push_back(std::move(run));
    return static_cast<int>(candidates.size()) < window;
  });
  if (!status.ok()) {
    ReportRpcError("regress: list the earlier runs", status);
    return false;
  }
  series = SelectRegressSeries(candidates, spec, window);
  return true;
}

bool Commands::ReadPromotedBaseline(const v1::RunSpec& spec,
                                    std::vector<v1::Run>& baseline) {
  v1::GetBaselineRequest request;
  *request.mutable_spec() = spec;
  v1::Baseline promoted;
  grpc::Status status =
      Unary(&v1::ClientService::StubInterface::GetBaseline, request, &promoted);
  // None promoted, or a coordinator from before promoted baselines.
  if (status.error_code() == grpc::StatusCode::NOT_FOUND ||
      status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return true;
  }
  if (!status.ok()) {
    ReportRpcError("regress: read the promoted baseline", status);
    return false;
  }
  return ReadBaselineRun(promoted.run_id(), baseline);
}

std::optional<RegressReport> Commands::JudgeSubmission(
    const std::vector<v1::Run>& runs, const RegressOptions& options,
    const std::vector<v1::Run>& named_run) {
  if (std::string error = UnscoredRunError(runs); !error.empty()) {
    RegressReport report;
    report.name = runs.front().spec().name();
    for (const v1::Run& run : runs) report.run_ids.push_back(run.id());
    report.error = std::move(error);
    return report;
  }
  std::vector<v1::Run> history;
  if (!ReadRegressSeries(runs, options.window, history)) return std::nullopt;
  std::vector<v1::Run> baseline;
  std::map<RegressMetric, double> file_values;
  RegressBaselineKind kind = options.baseline;
  switch (options.baseline) {
    case RegressBaselineKind::kRun:
      baseline = named_run;
      break;
    case RegressBaselineKind::kFile:
      if (auto it = options.file_values.find(runs.front().spec().name());
          it != options.file_values.end()) {
        file_values = it->second;
      }
      break;
    case RegressBaselineKind::kLastGood:
      if (!history.empty()) baseline.push_back(history.front());
      break;
    case RegressBaselineKind::kSeries:
    case RegressBaselineKind::kPromoted:
      if (!ReadPromotedBaseline(runs.front().spec(), baseline)) {
        return std::nullopt;
      }
      if (baseline.empty()) {
        kind = RegressBaselineKind::kSeries;
        baseline = history;
      } else {
        kind = RegressBaselineKind::kPromoted;
      }
      break;
  }
  return CompareRegress(runs, baseline, history, kind, options, file_values);
}

int Commands::Regress(const std::string& spec_source,
                      const std::string& spec_yaml,
                      const RegressOptions& options, bool json) {
  // A baseline run is checked before anything is submitted.
  std::vector<v1::Run> named_run;
  if (options.baseline == RegressBaselineKind::kRun &&
      !ReadBaselineRun(options.baseline_run, named_run)) {
    return kExitFailed;
  }
  // With --json, stdout carries the report alone.
  Commands live(stub_, options_, json ? err_ : out_, err_);
  std::vector<v1::Run> runs;
  const int watched =
      live.SubmitAndWatch(spec_source, spec_yaml, /*wait=*/true, runs);
  if (runs.empty()) return watched;  // refused or not submitted: reported

  // One report per submission (spec of the suite), in the suite's order.
  std::vector<std::vector<v1::Run>> submissions;
  for (v1::Run& run : runs) {
    if (submissions.empty() ||
        submissions.back().front().submission_id() != run.submission_id()) {
      submissions.emplace_back();
    }
    submissions.back().push_back(std::move(run));
  }
  std::vector<RegressReport> reports;
  for (const std::vector<v1::Run>& submission : submissions) {
    std::optional<RegressReport> report =
        JudgeSubmission(submission, options, named_run);
    if (!report.has_value()) return kExitFailed;
    reports.push_back(*std::move(report));
  }
  absl::StatusOr<Suite> suite = ParseSuite(spec_yaml);
  const std::string suite_name =
      suite.ok() ? suite->name : reports.front().name;
  if (json) {
    out_ << (reports.size() == 1 ? RegressReportJson(reports.front())
                                 : RegressSuiteJson(suite_name, reports));
  } else {
    for (const RegressReport& report : reports) {
      out_ << "\n";
      if (reports.size() > 1) out_ << report.name << "\n";
      out_ << FormatRegressReport(report);
    }
  }
  out_.flush();
  for (const auto& [path, what, text] :
       {std::tuple<const std::string&, const char*, std::string>{
            options.junit_path, "JUnit",
            options.junit_path.empty() ? ""
                                       : RegressJUnitXml(suite_name, reports)},
        {options.markdown_path, "Markdown",
         options.markdown_path.empty() ? ""
                                       : RegressMarkdown(suite_name, reports)},
        {options.json_path, "JSON",
         options.json_path.empty() ? ""
                                   : RegressSuiteJson(suite_name, reports)}}) {
    if (path.empty()) continue;
    if (!WriteTextFile(path, text)) {
      err_ << "hpcai500: cannot write " << what << " file '" << path
           << "': " << std::strerror(errno) << "\n";
      return kExitFailed;
    }
  }
  bool failed = false;
  bool regressed = false;
  for (const RegressReport& report : reports) {
    failed = failed || !report.error.empty();
    regressed = regressed || report.regressed();
  }
  if (failed) return kExitFailed;
  return regressed ? kExitRegressed : kExitOk;
}

int Commands::PromoteBaseline(int64_t run_id) {
  v1::PromoteBaselineRequest request;
  request.set_run_id(run_id);
  v1::Baseline baseline;
  grpc::Status status = Unary(
      &v1::ClientService::StubInterface::PromoteBaseline, request, &baseline);
  if (!status.ok()) {
    return ReportRpcError(absl::StrCat("promote run ", run_id).c_str(), status);
  }
  out_ << "run " << baseline.run_id()
       << " is the regress baseline of its series now (promoted by "
       << baseline.promoted_by() << ")\n";
  return kExitOk;
}

}  // namespace hpcai500
