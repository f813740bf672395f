// The Coordinator: its clients' calls, its agents' calls handed to
// AgentSessions, and the time-driven work. See coordinator.h.
#include "server/coordinator/coordinator.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/silence_deadline.h"
#include "common/status_macros.h"
#include "methodology/regress_band.h"
#include "methodology/scoring.h"
#include "server/coordinator/metrics.h"
#include "server/coordinator/queues.h"
#include "server/coordinator/requests.h"
#include "server/coordinator/submission.h"
#include "server/coordinator/submit_requests.h"

namespace hpcai500 {

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    Store* store, Clock* clock, const Registry* registry,
    CoordinatorOptions options) {
  std::unique_ptr<Coordinator> coordinator(
      new Coordinator(store, clock, registry, std::move(options)));
  RETURN_IF_ERROR(coordinator->Restore());
  RETURN_IF_ERROR(coordinator->state_.changes.Load(*store));
  return coordinator;
}

Coordinator::Coordinator(Store* store, Clock* clock, const Registry* registry,
                         CoordinatorOptions options)
    : state_(store, clock, registry, std::move(options)) {}

Coordinator::~Coordinator() { Shutdown(); }

absl::Status Coordinator::Restore() {
  absl::MutexLock lock(&state_.mu);
  const int64_t now = state_.clock->NowMs();
  RETURN_IF_ERROR(state_.intake.Restore());
  RETURN_IF_ERROR(state_.maintenance.Restore());
  ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, state_.store->ListNodes());
  for (v1::Node& info : nodes) {
    state_.OfferNodeLocked(info);
    const std::string name = info.name();
    state_.nodes.Restore(std::move(info), now);
    state_.scheduler.SetDraining(name, state_.nodes.nodes()[name].draining);
  }
  RETURN_IF_ERROR(node_health_.RestoreLocked());
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs,
                   state_.store->ListRunsInStates({v1::RUN_STATE_QUEUED,
                                                   v1::RUN_STATE_STARTING,
                                                   v1::RUN_STATE_RUNNING}));
  for (v1::Run& run : runs) {
    RunRecord& record = state_.runs[run.id()];
    record.run = std::move(run);
    if (record.run.state() == v1::RUN_STATE_QUEUED) {
      state_.scheduler.Enqueue(CoordinatorState::RequestFor(record.run));
      continue;
    }
    if (record.run.attempts_size() == 0) {
      // Placed but no attempt stored: cannot happen, but never strand a run.
      record.run.set_state(v1::RUN_STATE_QUEUED);
      state_.scheduler.Enqueue(CoordinatorState::RequestFor(record.run));
      state_.PersistLocked(record);
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
    state_.nodes.AddIfUnknown(name, now);
  }
  const Scheduler::Request request = CoordinatorState::RequestFor(record.run);
  state_.scheduler.Allocate(
      record.run.id(), record.run.queue(), record.nodes, request.ranks_per_node,
      request.gpus_per_node, attempt.started_ms(),
      request.time_limit_ms > 0 ? attempt.started_ms() + request.time_limit_ms
                                : 0);
  ASSIGN_OR_RETURN(
      std::vector<EventLine> stored,
      StoredEventLines(*state_.store, record.run.id(), attempt.number()));
  for (EventLine& event : stored) record.tracker.Add(std::move(event));
  ASSIGN_OR_RETURN(std::vector<v1::WorkerExited> exits,
                   state_.store->LoadExits(record.run.id(), attempt.number()));
  for (v1::WorkerExited& exit : exits) {
    record.exits[exit.rank()] = std::move(exit);
  }
  if (attempt.resumed_epoch() > 0) {
    absl::StatusOr<std::vector<AttemptEvents>> earlier =
        scoring_.EarlierAttemptsLocked(record);
    if (earlier.ok()) {
      record.carried_epochs = SummarizeEpochs(KeptEvents(*earlier));
    }
  }
  record.log.push_back(absl::StrFormat(
      "hpcai500d restarted; waiting for the agents of attempt %d (%s)",
      attempt.number(), absl::StrJoin(record.nodes, ", ")));
  record.RefreshEpochs(state_.MetricName(record.run.spec()), /*flush=*/false);
  LogInfo(absl::StrFormat(
      "run %d attempt %d: restored (%s, %d of %d exits stored), waiting for %s",
      record.run.id(), attempt.number(), RunStateName(record.run.state()),
      record.exits.size(), record.world_size(),
      absl::StrJoin(record.nodes, ", ")));
  if (static_cast<int>(record.exits.size()) == record.world_size()) {
    // Every rank finished before the restart: finished is finished.
    record.all_exited_ms = now;
    scoring_.MaybeFinishLocked(record, /*force=*/false);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------ clients

absl::StatusOr<v1::SubmitResponse> Coordinator::Submit(
    std::string_view spec_yaml, const std::string& user, int max_queued,
    const std::string& request_id) {
  RETURN_IF_ERROR(ValidateRequestId(request_id));
  std::optional<Store::SubmitRequestId> request =
      SubmitRequestIdFor(request_id, spec_yaml);
  // Parsed before the lock: the text and the registry are all it reads.
  const ParsedSubmission parsed =
      ParseSubmissionText(spec_yaml, *state_.registry);
  // Held from the look-up of the request id to the store of the runs: two
  // tries of one request never both store.
  absl::MutexLock lock(&state_.mu);
  // Before any check: the answer to a stored request stands even if the
  // nodes or the user's queue changed since.
  ASSIGN_OR_RETURN(
      std::optional<v1::SubmitResponse> replayed,
      ReplayedSubmit(*state_.store, user, request, state_.clock->NowMs()));
  if (replayed.has_value()) return *std::move(replayed);
  RETURN_IF_ERROR(parsed.error);
  if (request.has_value()) request->suite = parsed.suite;
  // Every spec is checked before any is stored: a suite goes in whole or
  // not at all.
  ASSIGN_OR_RETURN(const std::vector<PreparedSpec> prepared,
                   PrepareSpecs(parsed, state_.scheduler));
  RETURN_IF_ERROR(CheckSweepsAreOwn(prepared, user, *state_.store));
  if (max_queued > 0) {
    int64_t runs = 0;
    for (const PreparedSpec& one : prepared) runs += one.run_specs.size();
    ASSIGN_OR_RETURN(const int64_t queued, state_.store->CountQueuedRuns(user));
    if (queued + runs > max_queued) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "user %s has %d runs queued; at most %d may wait at once",
          user.empty() ? "(none)" : user, queued, max_queued));
    }
  }
  const int64_t now = state_.clock->NowMs();
  std::vector<Store::NewSubmission> submissions;
  for (const PreparedSpec& one : prepared) {
    submissions.push_back(Store::NewSubmission{
        one.yaml, one.run_specs, one.choice.queue, one.choice.priority});
  }
  // One transaction: a suite is stored whole or not at all.
  ASSIGN_OR_RETURN(
      const std::vector<v1::SubmitResponse> all_stored,
      state_.store->CreateSubmissions(submissions, now, user, request));
  for (size_t s = 0; s < prepared.size(); ++s) {
    const PreparedSpec& one = prepared[s];
    const v1::SubmitResponse& stored = all_stored[s];
    const v1::RunSpec& spec = one.run_specs.front();
    for (int i = 0; i < stored.run_ids_size(); ++i) {
      RunRecord& record = state_.runs[stored.run_ids(i)] =
          RunRecord::Queued(stored.run_ids(i), stored.submission_id(),
                            /*repetition=*/i + 1, one.run_specs[i], now);
      record.run.set_user(user);
      record.run.set_queue(one.choice.queue);
      record.run.set_priority(one.choice.priority);
      state_.scheduler.Enqueue(CoordinatorState::RequestFor(record.run));
    }
    LogInfo(absl::StrFormat(
        "submission %d: %s (%s/%s) queued as runs %s%s%s",
        stored.submission_id(), spec.name(), spec.workload(), spec.config(),
        absl::StrJoin(stored.run_ids(), ", "),
        parsed.suite.empty() ? "" : absl::StrCat(" (suite ", parsed.suite, ")"),
        request.has_value() ? absl::StrCat(", request '", request->id, "'")
                            : ""));
  }
  attempts_.ScheduleLocked();
  return CombinedSubmitResponse(all_stored, parsed.suite);
}

absl::StatusOr<v1::RunState> Coordinator::CancelRun(int64_t run_id) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(RunRecord * record, state_.RecordLocked(run_id));
  const v1::RunState state = record->run.state();
  if (state == v1::RUN_STATE_CANCELLED) return state;
  if (IsTerminal(state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " already ", RunStateName(state)));
  }
  state_.scheduler.Dequeue(run_id);
  attempts_.EndRunLocked(*record, v1::RUN_STATE_CANCELLED,
                         "cancelled by a user",
                         /*cancel_workers=*/IsPlaced(state));
  attempts_.ScheduleLocked();
  return record->run.state();
}

absl::StatusOr<v1::Run> Coordinator::HoldRun(int64_t run_id,
                                             const std::string& by) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(RunRecord * record, state_.RecordLocked(run_id));
  v1::Run& run = record->run;
  if (run.state() != v1::RUN_STATE_QUEUED) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " is ", RunStateName(run.state()),
                     "; only a queued run can be held"));
  }
  if (!run.held_by().empty()) return run;  // held already
  run.set_held_by(by.empty() ? "(anonymous)" : by);
  state_.scheduler.SetHeld(run_id, true);
  state_.PersistLocked(*record);
  const std::string line = absl::StrCat("held by ", run.held_by());
  LogInfo(absl::StrCat("run ", run_id, " ", line));
  record->Changed(line);
  attempts_.ScheduleLocked();
  return run;
}

absl::StatusOr<v1::Run> Coordinator::ReleaseRun(int64_t run_id) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(RunRecord * record, state_.RecordLocked(run_id));
  v1::Run& run = record->run;
  if (run.state() != v1::RUN_STATE_QUEUED || run.held_by().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id, " is not held (", RunStateName(run.state()), ")"));
  }
  run.clear_held_by();
  state_.scheduler.SetHeld(run_id, false);
  state_.PersistLocked(*record);
  LogInfo(absl::StrCat("run ", run_id, " released"));
  record->Changed("released");
  attempts_.ScheduleLocked();
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
  absl::MutexLock lock(&state_.mu);
  auto it = state_.nodes.nodes().find(name);
  if (it == state_.nodes.nodes().end()) {
    return absl::NotFoundError(absl::StrCat("no node ", name));
  }
  NodeTable::Node& node = it->second;
  node.draining = draining;
  node.drain_reason = reason;
  if (!draining) node_health_.ClearFlagLocked(name);
  state_.scheduler.SetDraining(name, draining);
  state_.SaveNodeLocked(node);
  LogInfo(absl::StrCat("node ", name, ": ",
                       draining ? absl::StrCat("draining (", reason, ")")
                                : std::string("resumed")));
  attempts_.ScheduleLocked();
  return state_.NodeViewLocked(node);
}

v1::ListQueuesResponse Coordinator::ListQueues() {
  absl::MutexLock lock(&state_.mu);
  v1::ListQueuesResponse response;
  for (const Scheduler::Queue& queue : state_.scheduler.queues()) {
    v1::Queue* shown = response.add_queues();
    *shown = QueueToProto(queue);
    const Scheduler::QueueLoad load = state_.scheduler.Load(queue.name);
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
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(RunRecord * record, state_.RecordLocked(run_id));
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
  const int64_t now = state_.clock->NowMs();
  RETURN_IF_ERROR(state_.store->InvalidateRun(run_id, by, reason, now));
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
  ASSIGN_OR_RETURN(v1::Run run, CurrentRun(*this, *state_.store, run_id));
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
  baseline.set_promoted_ms(state_.clock->NowMs());
  RETURN_IF_ERROR(state_.store->SaveBaseline(baseline));
  LogInfo(absl::StrCat("run ", run_id, " promoted to the regress baseline of ",
                       run.spec().name(), " by ", baseline.promoted_by()));
  return baseline;
}

absl::StatusOr<v1::Baseline> Coordinator::GetBaseline(const v1::RunSpec& spec) {
  ASSIGN_OR_RETURN(std::optional<v1::Baseline> baseline,
                   state_.store->FindBaseline(RegressSeriesKey(spec)));
  if (!baseline.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        "no promoted baseline for the series of '", spec.name(), "'"));
  }
  return *std::move(baseline);
}

absl::StatusOr<v1::ListChangesResponse> Coordinator::ListChanges(
    const v1::ListChangesRequest& request) {
  return state_.changes.List(request);
}

absl::StatusOr<std::optional<v1::RunUpdate>> Coordinator::NextRunUpdate(
    int64_t run_id, WatchCursor* cursor, absl::Duration timeout) {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(RunRecord * record, state_.RecordLocked(run_id));
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
    return state_.shutdown || record->version > cursor->version;
  };
  state_.mu.AwaitWithTimeout(absl::Condition(&changed), timeout);
  if (state_.shutdown) {
    return absl::UnavailableError("hpcai500d is shutting down");
  }
  return record->UpdateSince(*cursor);
}

std::optional<v1::Run> Coordinator::LiveRun(int64_t run_id) {
  absl::MutexLock lock(&state_.mu);
  auto it = state_.runs.find(run_id);
  if (it == state_.runs.end()) return std::nullopt;
  return it->second.run;
}

void Coordinator::ReplaceWithLive(
    google::protobuf::RepeatedPtrField<v1::Run>& runs) {
  absl::MutexLock lock(&state_.mu);
  for (v1::Run& run : runs) {
    auto it = state_.runs.find(run.id());
    if (it != state_.runs.end()) run = it->second.run;
  }
}

absl::StatusOr<v1::ListNodesResponse> Coordinator::ListNodes() {
  absl::MutexLock lock(&state_.mu);
  v1::ListNodesResponse response;
  for (const auto& [name, node] : state_.nodes.nodes()) {
    *response.add_nodes() = state_.NodeViewLocked(node);
  }
  node_health_.DecorateLocked(*response.mutable_nodes());
  *response.mutable_maintenance() =
      state_.maintenance.Shown(state_.clock->NowMs());
  return response;
}

std::string Coordinator::MetricsText() {
  absl::MutexLock lock(&state_.mu);
  MetricsSnapshot snapshot;
  absl::StatusOr<std::vector<std::pair<v1::RunState, int64_t>>> stored =
      state_.store->CountRunsByState();
  if (stored.ok()) snapshot.runs_by_state = *std::move(stored);
  snapshot.queue_length = state_.scheduler.queue_length();
  snapshot.nodes_connected = state_.nodes.connected();
  snapshot.nodes_known = static_cast<int64_t>(state_.nodes.nodes().size());
  snapshot.events_ingested = state_.intake.ingested();
  const StoreHealth health = state_.store->Health();
  snapshot.store_failing = health.failing;
  snapshot.store_write_errors = health.write_errors;
  snapshot.ingest_lag = state_.intake.lag();
  snapshot.scheduler_pass = attempts_.scheduler_pass().Read();
  return PrometheusText(snapshot);
}

void Coordinator::Tick() {
  absl::MutexLock lock(&state_.mu);
  const int64_t now = state_.clock->NowMs();
  state_.scheduler.AgePreflights(now);
  for (auto& [name, node] : state_.nodes.nodes()) {
    if (now < SilenceDeadlineMs(node.info.last_seen_ms(),
                                state_.maintenance.until_ms(),
                                state_.options.node_timeout_ms)) {
      continue;
    }
    sessions_.LoseRunsOnSilentNodeLocked(name, now - node.info.last_seen_ms());
    if (node.session != 0) {
      // Connected but mute: stop placing runs on it until it speaks again.
      state_.scheduler.SetSchedulable(name, false);
    }
  }
  for (auto& [run_id, record] : state_.runs) {
    if (record.unsaved) state_.PersistLocked(record);
    if (record.run.state() == v1::RUN_STATE_RUNNING &&
        record.all_exited_ms != 0 &&
        now - record.all_exited_ms >= state_.options.exit_grace_ms) {
      scoring_.MaybeFinishLocked(record, /*force=*/true);
    }
  }
  attempts_.EnforceTimeLimitsLocked(now);
  sessions_.ForgetGoneNodesLocked(now);
  attempts_.ScheduleLocked();
}

void Coordinator::Shutdown() {
  absl::MutexLock lock(&state_.mu);
  state_.shutdown = true;
}

// ------------------------------------------------------------------- agents

absl::StatusOr<int64_t> Coordinator::Connect(const v1::Register& request,
                                             AgentChannel* channel) {
  RETURN_IF_ERROR(ValidateRegister(request));
  absl::MutexLock lock(&state_.mu);
  return sessions_.ConnectLocked(request, channel);
}

absl::Status Coordinator::HandleAgentMessage(int64_t session,
                                             const v1::AgentMessage& message) {
  absl::MutexLock lock(&state_.mu);
  if (message.has_preflight_done()) {
    NodeTable::Node* node = state_.nodes.FindSession(session);
    if (node == nullptr) {
      return absl::FailedPreconditionError(
          "agent session unknown or replaced by a newer registration");
    }
    node_health_.HandleDoneLocked(node->info.name(), message.preflight_done());
    return absl::OkStatus();
  }
  return sessions_.HandleMessageLocked(session, message);
}

void Coordinator::Disconnect(int64_t session) {
  absl::MutexLock lock(&state_.mu);
  sessions_.DisconnectLocked(session);
}

absl::StatusOr<v1::PreflightResponse> Coordinator::Preflight(
    const v1::PreflightRequest& request) {
  absl::MutexLock lock(&state_.mu);
  std::vector<std::string> names(request.nodes().begin(),
                                 request.nodes().end());
  if (names.empty()) {
    if (!request.queue().empty() &&
        state_.scheduler.FindQueue(request.queue()) == nullptr) {
      return absl::NotFoundError(absl::StrCat("no queue ", request.queue()));
    }
    for (const auto& [name, node] : state_.nodes.nodes()) {
      if (node.session == 0) continue;
      const std::vector<std::string> queues = state_.scheduler.QueuesOf(name);
      if (request.queue().empty() ||
          std::find(queues.begin(), queues.end(), request.queue()) !=
              queues.end()) {
        names.push_back(name);
      }
    }
    if (names.empty()) {
      return absl::FailedPreconditionError(
          request.queue().empty()
              ? std::string("no node is connected")
              : absl::StrCat("no node of queue ", request.queue(),
                             " is connected"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<v1::PreflightResult> results,
                   node_health_.RunLocked(names));
  v1::PreflightResponse response;
  for (v1::PreflightResult& r : results) *response.add_results() = std::move(r);
  // A drained or flagged node changes what may be placed.
  attempts_.ScheduleLocked();
  return response;
}

absl::StatusOr<v1::NodeHealthResponse> Coordinator::NodeHealthOf(
    const std::string& name, int limit) {
  absl::MutexLock lock(&state_.mu);
  if (state_.nodes.nodes().count(name) == 0) {
    return absl::NotFoundError(absl::StrCat("no node ", name));
  }
  v1::NodeHealthResponse response;
  ASSIGN_OR_RETURN(std::vector<v1::PreflightResult> preflights,
                   state_.store->PreflightHistory(name, limit));
  for (v1::PreflightResult& r : preflights) {
    *response.add_preflights() = std::move(r);
  }
  ASSIGN_OR_RETURN(std::vector<v1::NodeIncident> incidents,
                   state_.store->ListIncidents(name, /*run_id=*/0, limit));
  for (v1::NodeIncident& i : incidents)
    *response.add_incidents() = std::move(i);
  return response;
}

absl::StatusOr<v1::MaintenanceWindow> Coordinator::SetMaintenance(
    int64_t duration_ms, const std::string& reason, const std::string& by) {
  absl::MutexLock lock(&state_.mu);
  return sessions_.SetMaintenanceLocked(duration_ms, reason, by);
}

}  // namespace hpcai500
