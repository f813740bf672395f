#include "server/coordinator/coordinator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/regress_band.h"
#include "common/run_state.h"
#include "common/scoring.h"
#include "common/spec.h"
#include "common/status_macros.h"
#include "common/suite.h"
#include "common/vocabulary.h"
#include "server/coordinator/metrics.h"
#include "server/coordinator/queues.h"
#include "server/coordinator/requests.h"
#include "server/coordinator/run_log.h"
#include "server/coordinator/submit_requests.h"
#include "server/store/leaderboard.h"

namespace hpcai500 {
absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    Store* store, Clock* clock, const Registry* registry,
    CoordinatorOptions options) {
  std::unique_ptr<Coordinator> coordinator(
      new Coordinator(store, clock, registry, options));
  RETURN_IF_ERROR(coordinator->Restore());
  return coordinator;
}

Coordinator::Coordinator(Store* store, Clock* clock, const Registry* registry,
                         CoordinatorOptions options)
    : store_(store),
      clock_(clock),
      registry_(registry),
      options_(options),
      scheduler_(options.queues.empty() ? Scheduler()
                                        : Scheduler(options.queues)),
      intake_(store, clock),
      maintenance_(store) {}

Coordinator::~Coordinator() { Shutdown(); }

absl::Status Coordinator::Restore() {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  RETURN_IF_ERROR(intake_.Restore());
  RETURN_IF_ERROR(maintenance_.Restore());
  ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, store_->ListNodes());
  for (v1::Node& info : nodes) {
    OfferNodeLocked(info);
    const std::string name = info.name();
    nodes_.Restore(std::move(info), now);
    scheduler_.SetDraining(name, nodes_.nodes()[name].draining);
  }
  ASSIGN_OR_RETURN(
      std::vector<v1::Run> runs,
      store_->ListRunsInStates({v1::RUN_STATE_QUEUED, v1::RUN_STATE_STARTING,
                                v1::RUN_STATE_RUNNING}));
  for (v1::Run& run : runs) {
    RunRecord& record = runs_[run.id()];
    record.run = std::move(run);
    if (record.run.state() == v1::RUN_STATE_QUEUED) {
      scheduler_.Enqueue(RequestFor(record.run));
      continue;
    }
    if (record.run.attempts_size() == 0) {
      // Placed but no attempt stored: cannot happen, but never strand a run.
      record.run.set_state(v1::RUN_STATE_QUEUED);
      scheduler_.Enqueue(RequestFor(record.run));
      PersistLocked(record);
      continue;
    }
    RETURN_IF_ERROR(RestorePlacedLocked(record, now));
  }
  return absl::OkStatus();
}

absl::Status Coordinator::RestorePlacedLocked(RunRecord& record, int64_t now) {
  const v1::Attempt& attempt = *record.run.attempts().rbegin();
  record.nodes.assign(attempt.nodes().begin(), attempt.nodes().end());
  record.start_sent = attempt.master_port() > 0;
  for (const std::string& name : record.nodes) {
    nodes_.AddIfUnknown(name, now);
  }
  const Scheduler::Request request = RequestFor(record.run);
  scheduler_.Allocate(
      record.run.id(), record.run.queue(), record.nodes, request.ranks_per_node,
      request.gpus_per_node, attempt.started_ms(),
      request.time_limit_ms > 0 ? attempt.started_ms() + request.time_limit_ms
                                : 0);
  ASSIGN_OR_RETURN(
      std::vector<EventLine> stored,
      StoredEventLines(*store_, record.run.id(), attempt.number()));
  for (EventLine& event : stored) record.tracker.Add(std::move(event));
  ASSIGN_OR_RETURN(std::vector<v1::WorkerExited> exits,
                   store_->LoadExits(record.run.id(), attempt.number()));
  for (v1::WorkerExited& exit : exits) {
    record.exits[exit.rank()] = std::move(exit);
  }
  if (attempt.resumed_epoch() > 0) {
    absl::StatusOr<std::vector<AttemptEvents>> earlier =
        EarlierAttemptsLocked(record);
    if (earlier.ok()) {
      record.carried_epochs = SummarizeEpochs(KeptEvents(*earlier));
    }
  }
  record.log.push_back(absl::StrFormat(
      "hpcai500d restarted; waiting for the agents of attempt %d (%s)",
      attempt.number(), absl::StrJoin(record.nodes, ", ")));
  record.RefreshEpochs(MetricName(record.run.spec()), /*flush=*/false);
  LogInfo(absl::StrFormat(
      "run %d attempt %d: restored (%s, %d of %d exits stored), waiting for %s",
      record.run.id(), attempt.number(), RunStateName(record.run.state()),
      record.exits.size(), record.world_size(),
      absl::StrJoin(record.nodes, ", ")));
  if (static_cast<int>(record.exits.size()) == record.world_size()) {
    // Every rank finished before the restart: finished is finished.
    record.all_exited_ms = now;
    MaybeFinishLocked(record, /*force=*/false);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------ clients

absl::StatusOr<Coordinator::PreparedSpec> Coordinator::PrepareSpecLocked(
    std::string yaml) {
  PreparedSpec prepared;
  ASSIGN_OR_RETURN(prepared.run_specs, ParseSubmission(yaml, *registry_));
  prepared.yaml = std::move(yaml);
  ASSIGN_OR_RETURN(prepared.choice, ChooseQueue(prepared.run_specs.front(),
                                                scheduler_.queues()));
  for (v1::RunSpec& run_spec : prepared.run_specs) {
    run_spec.set_time_limit_s(prepared.choice.time_limit_s);
  }
  const v1::RunSpec& spec = prepared.run_specs.front();
  v1::Run proposed;
  *proposed.mutable_spec() = spec;
  proposed.set_queue(prepared.choice.queue);
  const Scheduler::Request request = RequestFor(proposed);
  const int fitting = scheduler_.EligibleNodes(request, /*up_only=*/false);
  if (scheduler_.node_count() > 0 && fitting < spec.nodes()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the run needs %s each; of the %d registered node(s), %d can host it "
        "(see `hpcai500 nodes`)",
        scheduler_.Needs(request, /*free=*/false), scheduler_.node_count(),
        fitting));
  }
  return prepared;
}

absl::Status Coordinator::CheckSweepsAreOwnLocked(
    const std::vector<PreparedSpec>& prepared, const std::string& user) {
  std::set<std::string> sweeps;
  for (const PreparedSpec& one : prepared) {
    const std::string& sweep = one.run_specs.front().sweep();
    if (sweep.empty() || !sweeps.insert(sweep).second) continue;
    ASSIGN_OR_RETURN(const std::optional<std::string> owner,
                     store_->OtherSweepOwner(sweep, user));
    if (owner.has_value()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "field 'sweep': sweep '", sweep,
          "' holds another user's runs; a sweep is its submitter's (hpcai500 "
          "sweep names a new one)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SubmitResponse> Coordinator::Submit(
    std::string_view spec_yaml, const std::string& user, int max_queued,
    const std::string& request_id) {
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  std::optional<Store::SubmitRequestId> request =
      SubmitRequestIdFor(request_id, spec_yaml);
  // Held from the look-up of the request id to the store of the runs: two
  // tries of one request never both store.
  absl::MutexLock lock(&mu_);
  // Before any check: the answer to a stored request stands even if the
  // nodes or the user's queue changed since.
  ASSIGN_OR_RETURN(std::optional<v1::SubmitResponse> replayed,
                   ReplayedSubmit(*store_, user, request, clock_->NowMs()));
  if (replayed.has_value()) return *std::move(replayed);
  absl::StatusOr<Suite> parsed = ParseSuite(spec_yaml);
  if (!parsed.ok()) {
    // One spec's own error says more than the suite's.
    absl::StatusOr<std::vector<v1::RunSpec>> single =
        ParseSubmission(spec_yaml, *registry_);
    return single.ok() ? parsed.status() : single.status();
  }
  Suite suite = *std::move(parsed);
  // One plain spec is stored as the user wrote it (comments, layout); the
  // one item of a `suite:` file is not the whole text (hpcai500 sweep
  // --nodes N, a nightly suite cut down to one spec).
  if (suite.specs.size() == 1 && !suite.listed) {
    suite.specs[0] = std::string(spec_yaml);
  }
  const std::string suite_name = suite.specs.size() > 1 ? suite.name : "";
  if (request.has_value()) request->suite = suite_name;
  // Every spec is checked before any is stored: a suite goes in whole or
  // not at all.
  std::vector<PreparedSpec> prepared;
  int64_t runs = 0;
  for (size_t i = 0; i < suite.specs.size(); ++i) {
    absl::StatusOr<PreparedSpec> one = PrepareSpecLocked(suite.specs[i]);
    if (!one.ok()) {
      if (suite.specs.size() == 1) return one.status();
      return absl::Status(one.status().code(),
                          absl::StrCat("suite ", suite.name, ", spec ", i + 1,
                                       ": ", one.status().message()));
    }
    runs += static_cast<int64_t>(one->run_specs.size());
    prepared.push_back(*std::move(one));
  }
  RETURN_IF_ERROR(CheckSweepsAreOwnLocked(prepared, user));
  if (max_queued > 0) {
    ASSIGN_OR_RETURN(const int64_t queued, store_->CountQueuedRuns(user));
    if (queued + runs > max_queued) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "user %s has %d runs queued; at most %d may wait at once",
          user.empty() ? "(none)" : user, queued, max_queued));
    }
  }
  const int64_t now = clock_->NowMs();
  std::vector<Store::NewSubmission> submissions;
  for (const PreparedSpec& one : prepared) {
    submissions.push_back(Store::NewSubmission{
        one.yaml, one.run_specs, one.choice.queue, one.choice.priority});
  }
  // One transaction: a suite is stored whole or not at all.
  ASSIGN_OR_RETURN(const std::vector<v1::SubmitResponse> all_stored,
                   store_->CreateSubmissions(submissions, now, user, request));
  for (size_t s = 0; s < prepared.size(); ++s) {
    const PreparedSpec& one = prepared[s];
    const v1::SubmitResponse& stored = all_stored[s];
    const v1::RunSpec& spec = one.run_specs.front();
    for (int i = 0; i < stored.run_ids_size(); ++i) {
      RunRecord& record = runs_[stored.run_ids(i)] =
          RunRecord::Queued(stored.run_ids(i), stored.submission_id(),
                            /*repetition=*/i + 1, one.run_specs[i], now);
      record.run.set_user(user);
      record.run.set_queue(one.choice.queue);
      record.run.set_priority(one.choice.priority);
      scheduler_.Enqueue(RequestFor(record.run));
    }
    LogInfo(absl::StrFormat(
        "submission %d: %s (%s/%s) queued as runs %s%s%s",
        stored.submission_id(), spec.name(), spec.workload(), spec.config(),
        absl::StrJoin(stored.run_ids(), ", "),
        suite_name.empty() ? "" : absl::StrCat(" (suite ", suite_name, ")"),
        request.has_value() ? absl::StrCat(", request '", request->id, "'")
                            : ""));
  }
  ScheduleLocked();
  return CombinedSubmitResponse(all_stored, suite_name);
}

absl::StatusOr<v1::RunState> Coordinator::CancelRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  const v1::RunState state = record->run.state();
  if (state == v1::RUN_STATE_CANCELLED) return state;
  if (IsTerminal(state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " already ", RunStateName(state)));
  }
  scheduler_.Dequeue(run_id);
  EndRunLocked(*record, v1::RUN_STATE_CANCELLED, "cancelled by a user",
               /*cancel_workers=*/IsPlaced(state));
  ScheduleLocked();
  return record->run.state();
}

absl::StatusOr<v1::Run> Coordinator::HoldRun(int64_t run_id,
                                             const std::string& by) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  v1::Run& run = record->run;
  if (run.state() != v1::RUN_STATE_QUEUED) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is ", RunStateName(run.state()),
                     "; only a queued run can be held"));
  }
  if (!run.held_by().empty()) return run;  // held already
  run.set_held_by(by.empty() ? "(anonymous)" : by);
  scheduler_.SetHeld(run_id, true);
  PersistLocked(*record);
  const std::string line = absl::StrCat("held by ", run.held_by());
  LogInfo(absl::StrCat("run ", run_id, " ", line));
  record->Changed(line);
  ScheduleLocked();
  return run;
}

absl::StatusOr<v1::Run> Coordinator::ReleaseRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  v1::Run& run = record->run;
  if (run.state() != v1::RUN_STATE_QUEUED || run.held_by().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id, " is not held (", RunStateName(run.state()), ")"));
  }
  run.clear_held_by();
  scheduler_.SetHeld(run_id, false);
  PersistLocked(*record);
  LogInfo(absl::StrCat("run ", run_id, " released"));
  record->Changed("released");
  ScheduleLocked();
  return run;
}

absl::StatusOr<v1::Node> Coordinator::DrainNode(const std::string& name,
                                                const std::string& reason) {
  if (reason.empty() || reason.size() > 1024) {
    return absl::InvalidArgumentError(
        "reason: required (--reason), at most 1024 bytes");
  }
  return SetDraining(name, true, reason);
}

absl::StatusOr<v1::Node> Coordinator::ResumeNode(const std::string& name) {
  return SetDraining(name, false, "");
}

absl::StatusOr<v1::Node> Coordinator::SetDraining(const std::string& name,
                                                  bool draining,
                                                  const std::string& reason) {
  absl::MutexLock lock(&mu_);
  auto it = nodes_.nodes().find(name);
  if (it == nodes_.nodes().end()) {
    return absl::NotFoundError(absl::StrCat("no node ", name));
  }
  NodeState& node = it->second;
  node.draining = draining;
  node.drain_reason = reason;
  scheduler_.SetDraining(name, draining);
  SaveNodeLocked(node);
  LogInfo(absl::StrCat("node ", name, ": ",
                       draining ? absl::StrCat("draining (", reason, ")")
                                : std::string("resumed")));
  ScheduleLocked();
  return NodeViewLocked(node);
}

v1::ListQueuesResponse Coordinator::ListQueues() {
  absl::MutexLock lock(&mu_);
  v1::ListQueuesResponse response;
  for (const Scheduler::Queue& queue : scheduler_.queues()) {
    v1::Queue* shown = response.add_queues();
    *shown = QueueToProto(queue);
    const Scheduler::QueueLoad load = scheduler_.Load(queue.name);
    shown->set_nodes(load.nodes);
    shown->set_idle_nodes(load.idle_nodes);
    shown->set_queued_runs(load.queued_runs);
    shown->set_running_runs(load.running_runs);
  }
  return response;
}

absl::StatusOr<v1::Run> Coordinator::InvalidateRun(int64_t run_id,
                                                   const std::string& by,
                                                   const std::string& reason) {
  if (reason.empty() || reason.size() > 1024) {
    return absl::InvalidArgumentError(
        "reason: required (--reason), at most 1024 bytes");
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  v1::Run& run = record->run;
  if (run.state() != v1::RUN_STATE_SUCCEEDED) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is ", RunStateName(run.state()),
                     "; only a succeeded run has a result to invalidate"));
  }
  if (!run.invalidated_by().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " was invalidated already by ",
                     run.invalidated_by(), ": ", run.invalidation_reason()));
  }
  const int64_t now = clock_->NowMs();
  RETURN_IF_ERROR(store_->InvalidateRun(run_id, by, reason, now));
  run.set_invalidated_by(by);
  run.set_invalidation_reason(reason);
  run.set_invalidated_ms(now);
  const std::string line =
      absl::StrCat("result invalidated by ", by, ": ", reason);
  LogInfo(absl::StrCat("run ", run_id, " ", line));
  record->Changed(line);
  return run;
}

absl::StatusOr<v1::Baseline> Coordinator::PromoteBaseline(
    int64_t run_id, const std::string& by) {
  ASSIGN_OR_RETURN(v1::Run run, CurrentRun(*this, *store_, run_id));
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.has_score()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id, " is ", RunStateName(run.state()),
        run.state() == v1::RUN_STATE_SUCCEEDED ? " without a score" : "",
        "; a baseline must be a succeeded run with a score"));
  }
  if (!run.invalidated_by().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, "'s result was invalidated by ",
                     run.invalidated_by(), "; it cannot be a baseline"));
  }
  v1::Baseline baseline;
  baseline.set_series(RegressSeriesKey(run.spec()));
  baseline.set_run_id(run_id);
  baseline.set_promoted_by(by.empty() ? "(anonymous)" : by);
  baseline.set_promoted_ms(clock_->NowMs());
  RETURN_IF_ERROR(store_->SaveBaseline(baseline));
  LogInfo(absl::StrCat("run ", run_id, " promoted to the regress baseline of ",
                       run.spec().name(), " by ", baseline.promoted_by()));
  return baseline;
}

absl::StatusOr<v1::Baseline> Coordinator::GetBaseline(const v1::RunSpec& spec) {
  ASSIGN_OR_RETURN(std::optional<v1::Baseline> baseline,
                   store_->FindBaseline(RegressSeriesKey(spec)));
  if (!baseline.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        "no promoted baseline for the series of '", spec.name(), "'"));
  }
  return *std::move(baseline);
}

absl::StatusOr<std::optional<v1::RunUpdate>> Coordinator::NextRunUpdate(
    int64_t run_id, WatchCursor* cursor, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || record->version > cursor->version;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  if (shutdown_) {
    return absl::UnavailableError("hpcai500d is shutting down");
  }
  return record->UpdateSince(*cursor);
}

std::optional<v1::Run> Coordinator::LiveRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.run;
}

void Coordinator::ReplaceWithLive(
    google::protobuf::RepeatedPtrField<v1::Run>& runs) {
  absl::MutexLock lock(&mu_);
  for (v1::Run& run : runs) {
    auto it = runs_.find(run.id());
    if (it != runs_.end()) run = it->second.run;
  }
}

absl::StatusOr<v1::ListNodesResponse> Coordinator::ListNodes() {
  absl::MutexLock lock(&mu_);
  v1::ListNodesResponse response;
  for (const auto& [name, node] : nodes_.nodes()) {
    *response.add_nodes() = NodeViewLocked(node);
  }
  *response.mutable_maintenance() = maintenance_.Shown(clock_->NowMs());
  return response;
}

std::string Coordinator::MetricsText() {
  absl::MutexLock lock(&mu_);
  MetricsSnapshot snapshot;
  absl::StatusOr<std::vector<std::pair<v1::RunState, int64_t>>> stored =
      store_->CountRunsByState();
  if (stored.ok()) snapshot.runs_by_state = *std::move(stored);
  snapshot.queue_length = scheduler_.queue_length();
  snapshot.nodes_connected = nodes_.connected();
  snapshot.nodes_known = static_cast<int64_t>(nodes_.nodes().size());
  snapshot.events_ingested = intake_.ingested();
  const StoreHealth health = store_->Health();
  snapshot.store_failing = health.failing;
  snapshot.store_write_errors = health.write_errors;
  snapshot.ingest_lag = intake_.lag();
  snapshot.scheduler_pass = scheduler_pass_.Read();
  return PrometheusText(snapshot);
}

// ------------------------------------------------------------------ helpers

void Coordinator::ScheduleLocked() {
  const int64_t passes = scheduler_.passes();
  // Measured on the real clock (a test's fake clock does not move).
  const absl::Time start = absl::Now();
  const std::vector<Scheduler::Placement> placements =
      scheduler_.Schedule(clock_->NowMs());
  if (scheduler_.passes() != passes) {
    scheduler_pass_.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  for (const Scheduler::Placement& placement : placements) {
    auto it = runs_.find(placement.run_id);
    if (it == runs_.end()) {
      scheduler_.Deallocate(placement.run_id);
      continue;
    }
    StartAttemptLocked(it->second, placement.nodes, placement.backfilled);
  }
  if (scheduler_.passes() != passes) NoteWaitingReasonsLocked();
}

void Coordinator::NoteWaitingReasonsLocked() {
  for (const int64_t run_id : scheduler_.QueuedRunIds()) {
    auto it = runs_.find(run_id);
    if (it == runs_.end()) continue;
    RunRecord& record = it->second;
    if (record.run.state() != v1::RUN_STATE_QUEUED) continue;
    // By reference: 10,000 runs waiting behind one head share its text.
    const std::string& reason = scheduler_.Reason(run_id);
    const std::string held =
        reason == "Held" ? absl::StrCat("Held: by ", record.run.held_by(),
                                        " (`hpcai500 release ", run_id, "`)")
                         : "";
    const std::string& shown = held.empty() ? reason : held;
    if (shown == record.run.reason()) continue;
    record.run.set_reason(shown);
    record.Changed("");
  }
}

void Coordinator::StartAttemptLocked(RunRecord& record,
                                     const std::vector<std::string>& nodes,
                                     bool backfilled) {
  const auto [resume_attempt, resume_epoch] = ResumePointLocked(record, nodes);
  v1::Attempt& attempt =
      record.BeginAttempt(nodes, clock_->NowMs(), resume_attempt, resume_epoch);
  for (const std::string& name : nodes) {
    auto node = nodes_.nodes().find(name);
    if (node != nodes_.nodes().end() && node->second.info.has_inventory()) {
      (*attempt.mutable_inventory())[name] = node->second.info.inventory();
    }
  }
  PersistLocked(record);
  std::string line = absl::StrFormat(
      "attempt %d: placed on %s%s; node %s reserves the rendezvous port",
      attempt.number(), absl::StrJoin(nodes, ", "),
      backfilled ? " (backfilled ahead of a waiting run)" : "", nodes.front());
  if (resume_epoch > 0) {
    absl::StrAppendFormat(&line,
                          "; resumes from attempt %d's checkpoint of "
                          "epoch %d",
                          resume_attempt, resume_epoch);
  }
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
  SendReserveLocked(record);
}

void Coordinator::SendReserveLocked(RunRecord& record) {
  v1::CoordinatorMessage reserve =
      record.AssignmentFor(v1::Assignment::PHASE_RESERVE, /*node_rank=*/0);
  reserve.mutable_assignment()->set_probe_checkpoints_attempt(
      ProbeAttemptLocked(record));
  SendLocked(record.nodes.front(), reserve);
}

void Coordinator::SendLocked(const std::string& node,
                             const v1::CoordinatorMessage& message) {
  if (!nodes_.Send(node, message)) {
    LogWarning(absl::StrCat("node ", node, ": not connected; message dropped"));
  }
}

void Coordinator::EndRunLocked(RunRecord& record, v1::RunState state,
                               const std::string& error, bool cancel_workers) {
  const int64_t now = clock_->NowMs();
  scheduler_.Deallocate(record.run.id());
  record.End(state, error, now);
  record.RefreshEpochs(MetricName(record.run.spec()), /*flush=*/true);
  PersistLocked(record);  // saved before any agent hears of it
  if (cancel_workers) CancelWorkersLocked(record, error);
  record.tracker.Reset();  // the events are stored; scoring is done
  const std::string line = FinalLine(record.run, MetricName(record.run.spec()));
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

void Coordinator::PersistLocked(RunRecord& record) {
  absl::Status status = store_->UpdateRun(record.run);
  if (status.ok() && record.run.attempts_size() > 0) {
    status =
        store_->SaveAttempt(record.run.id(), *record.run.attempts().rbegin());
  }
  // Logged once a spell: Tick tries again every second.
  if (!status.ok() && !record.unsaved) {
    LogError(absl::StrCat("run ", record.run.id(), ": storing its state: ",
                          status.ToString(), " (tried again every tick)"));
  } else if (status.ok() && record.unsaved) {
    LogInfo(absl::StrCat("run ", record.run.id(), ": its state is stored"));
  }
  record.unsaved = !status.ok();
}

RunRecord* Coordinator::CurrentAttemptLocked(const v1::AttemptKey& key) {
  auto it = runs_.find(key.run_id());
  if (it == runs_.end() || !IsPlaced(it->second.run.state())) return nullptr;
  if (it->second.key().attempt() != key.attempt()) return nullptr;
  return &it->second;
}

absl::StatusOr<RunRecord*> Coordinator::RecordLocked(int64_t run_id) {
  auto it = runs_.find(run_id);
  if (it != runs_.end()) return &it->second;
  ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(run_id));
  const std::string metric = MetricName(run.spec());
  RunRecord& record = runs_[run_id] =
      RunRecord::FromStored(std::move(run), metric);
  return &record;
}

Scheduler::Request Coordinator::RequestFor(const v1::Run& run) {
  const v1::RunSpec& spec = run.spec();
  Scheduler::Request request;
  request.run_id = run.id();
  request.queue = run.queue();
  request.priority = run.priority();
  request.nodes = spec.nodes();
  request.ranks_per_node = spec.ranks_per_node();
  request.gpus_per_node =
      spec.device() == Name(Device::kCuda) ? spec.ranks_per_node() : 0;
  request.constraints.insert(spec.constraints().begin(),
                             spec.constraints().end());
  request.time_limit_ms = spec.time_limit_s() * 1000;
  request.held = !run.held_by().empty();
  return request;
}

v1::Node Coordinator::NodeViewLocked(const NodeState& node) {
  v1::Node view = node.info;
  const std::string& name = node.info.name();
  view.set_connected(node.session != 0);
  const int used = scheduler_.used_slots(name);
  view.set_used_slots(used);
  view.clear_queues();
  for (const std::string& queue : scheduler_.QueuesOf(name)) {
    view.add_queues(queue);
  }
  view.clear_state_reason();
  if (node.leaving) {
    view.set_state("down");
    view.set_state_reason(
        absl::StrCat(NodeTable::kLeftReasonPrefix, node.leave_reason));
  } else if (node.draining) {
    view.set_state(used > 0 ? "draining" : "drained");
    view.set_state_reason(node.drain_reason);
  } else if (node.session == 0) {
    view.set_state("down");
    view.set_state_reason("not connected");
  } else if (!scheduler_.IsSchedulable(name)) {
    view.set_state("down");
    view.set_state_reason("silent past the node timeout");
  } else {
    view.set_state(used > 0 ? "busy" : "idle");
  }
  return view;
}

void Coordinator::SaveNodeLocked(const NodeState& node) {
  absl::Status saved = store_->SaveNode(NodeViewLocked(node));
  if (!saved.ok()) LogError(saved.ToString());
}

void Coordinator::OfferNodeLocked(const v1::Node& info) {
  Scheduler::NodeOffer offer;
  offer.slots = info.slots();
  offer.gpus = info.gpus();
  offer.labels.insert(info.labels().begin(), info.labels().end());
  offer.labels[kNodeLabel] = info.name();  // constraints may pin to a node
  scheduler_.SetNode(info.name(), offer);
}

std::string Coordinator::MetricName(const v1::RunSpec& spec) const {
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  return workload != nullptr ? workload->metric : "quality";
}

}  // namespace hpcai500
