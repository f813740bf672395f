#include "server/coordinator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/scoring.h"
#include "common/status_macros.h"
#include "server/leaderboard.h"
#include "server/metrics.h"
#include "server/requests.h"
#include "server/run_log.h"

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
    : store_(store), clock_(clock), registry_(registry), options_(options) {}

Coordinator::~Coordinator() { Shutdown(); }

absl::Status Coordinator::Restore() {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  ASSIGN_OR_RETURN(events_ingested_, store_->CountEvents());
  ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, store_->ListNodes());
  for (v1::Node& info : nodes) {
    scheduler_.SetNode(info.name(), info.slots(), /*schedulable=*/false);
    nodes_.Restore(std::move(info), now);
  }
  ASSIGN_OR_RETURN(
      std::vector<v1::Run> runs,
      store_->ListRunsInStates({v1::RUN_STATE_QUEUED, v1::RUN_STATE_STARTING,
                                v1::RUN_STATE_RUNNING}));
  for (v1::Run& run : runs) {
    RunRecord& record = runs_[run.id()];
    record.run = std::move(run);
    const v1::RunSpec& spec = record.run.spec();
    if (record.run.state() == v1::RUN_STATE_QUEUED) {
      scheduler_.Enqueue(record.run.id(), spec.nodes(), spec.ranks_per_node());
      continue;
    }
    if (record.run.attempts_size() == 0) {
      // Placed but no attempt stored: cannot happen, but never strand a run.
      record.run.set_state(v1::RUN_STATE_QUEUED);
      scheduler_.Enqueue(record.run.id(), spec.nodes(), spec.ranks_per_node());
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
    if (nodes_.AddIfUnknown(name, now)) {
      scheduler_.SetNode(name, 0, /*schedulable=*/false);
    }
  }
  scheduler_.Hold(record.run.id(), record.nodes,
                  record.run.spec().ranks_per_node());
  ASSIGN_OR_RETURN(std::vector<StoredEvent> stored,
                   store_->LoadEvents(record.run.id(), attempt.number()));
  for (const StoredEvent& event : stored) {
    if (!event.error.empty()) continue;
    absl::StatusOr<EventLine> parsed = ParseEventLine(event.line);
    if (parsed.ok()) record.tracker.Add(*std::move(parsed));
  }
  record.log.push_back(absl::StrFormat(
      "hpcai500d restarted; waiting for the agents of attempt %d (%s)",
      attempt.number(), absl::StrJoin(record.nodes, ", ")));
  record.RefreshEpochs(MetricName(record.run.spec()), /*flush=*/false);
  LogInfo(absl::StrFormat("run %d attempt %d: restored (%s), waiting for %s",
                          record.run.id(), attempt.number(),
                          RunStateName(record.run.state()),
                          absl::StrJoin(record.nodes, ", ")));
  return absl::OkStatus();
}

// ------------------------------------------------------------------ clients

absl::StatusOr<v1::SubmitResponse> Coordinator::Submit(
    std::string_view spec_yaml) {
  ASSIGN_OR_RETURN(std::vector<v1::RunSpec> run_specs,
                   ParseSubmission(spec_yaml, *registry_));
  const v1::RunSpec& spec = run_specs.front();
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  ASSIGN_OR_RETURN(
      v1::SubmitResponse response,
      store_->CreateSubmission(std::string(spec_yaml), run_specs, now));
  for (int i = 0; i < response.run_ids_size(); ++i) {
    runs_[response.run_ids(i)] =
        RunRecord::Queued(response.run_ids(i), response.submission_id(),
                          /*repetition=*/i + 1, run_specs[i], now);
    scheduler_.Enqueue(response.run_ids(i), spec.nodes(),
                       spec.ranks_per_node());
  }
  LogInfo(absl::StrFormat("submission %d: %s (%s/%s) queued as runs %s",
                          response.submission_id(), spec.name(),
                          spec.workload(), spec.config(),
                          absl::StrJoin(response.run_ids(), ", ")));
  ScheduleLocked();
  return response;
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

absl::StatusOr<v1::Run> Coordinator::GetRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) return it->second.run;
  return store_->GetRun(run_id);
}

absl::StatusOr<v1::ListRunsResponse> Coordinator::ListRuns(
    const v1::ListRunsRequest& request) {
  ASSIGN_OR_RETURN(const v1::ListRunsRequest filter, ListRunsFilter(request));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListRuns(filter));
  v1::ListRunsResponse response;
  for (v1::Run& run : runs) {
    auto it = runs_.find(run.id());
    *response.add_runs() = it != runs_.end() ? it->second.run : std::move(run);
  }
  return response;
}

absl::StatusOr<v1::LeaderboardResponse> Coordinator::Leaderboard(
    const v1::LeaderboardRequest& request) {
  RETURN_IF_ERROR(ValidateLeaderboardRequest(request, *registry_));
  std::vector<v1::Run> runs;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(runs, store_->ListRuns(v1::ListRunsRequest()));
  }
  return BuildLeaderboard(runs, request);
}

absl::StatusOr<v1::ListNodesResponse> Coordinator::ListNodes() {
  absl::MutexLock lock(&mu_);
  v1::ListNodesResponse response;
  for (const auto& [name, node] : nodes_.nodes()) {
    v1::Node* info = response.add_nodes();
    *info = node.info;
    info->set_connected(node.session != 0);
    info->set_used_slots(scheduler_.used_slots(name));
  }
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
  snapshot.events_ingested = events_ingested_;
  return PrometheusText(snapshot);
}

// ------------------------------------------------------------------- agents

absl::StatusOr<int64_t> Coordinator::Connect(const v1::Register& request,
                                             AgentChannel* channel) {
  RETURN_IF_ERROR(ValidateRegister(request));
  absl::MutexLock lock(&mu_);
  bool replaced = false;
  NodeState& node =
      nodes_.Connect(request, channel, clock_->NowMs(), &replaced);
  const v1::Node& info = node.info;
  if (replaced) {
    LogInfo(
        absl::StrCat("node ", request.name(),
                     ": registered again; the previous stream is replaced"));
  }
  scheduler_.SetNode(info.name(), info.slots(), /*schedulable=*/true);
  absl::Status saved = store_->SaveNode(info);
  if (!saved.ok()) LogError(saved.ToString());
  LogInfo(absl::StrFormat(
      "node %s: registered (%s, %d slots, %d cpus, %d gpus, %d attempts "
      "running)",
      info.name(), info.address(), info.slots(), info.cpus(), info.gpus(),
      request.running_size()));

  v1::CoordinatorMessage registered;
  registered.mutable_registered()->set_node(info.name());
  registered.mutable_registered()->set_heartbeat_interval_ms(
      options_.heartbeat_interval_ms);
  channel->Send(registered);

  ReconcileLocked(request, channel);
  ScheduleLocked();
  return node.session;
}

void Coordinator::ReconcileLocked(const v1::Register& request,
                                  AgentChannel* channel) {
  const std::string& name = request.name();
  std::set<std::pair<int64_t, int32_t>> listed;
  for (const v1::RunningAttempt& running : request.running()) {
    listed.insert({running.key().run_id(), running.key().attempt()});
    if (CurrentAttemptLocked(running.key()) == nullptr) {
      v1::CoordinatorMessage cancel;
      *cancel.mutable_cancel()->mutable_key() = running.key();
      cancel.mutable_cancel()->set_reason(absl::StrCat(
          Describe(running.key()), " is not running on the coordinator"));
      channel->Send(cancel);
      LogInfo(absl::StrCat("node ", name, ": cancelling its ",
                           Describe(running.key()), " (not current)"));
    }
  }
  for (auto& [run_id, record] : runs_) {
    if (!IsPlaced(record.run.state())) continue;
    const int node_index = record.NodeIndex(name);
    if (node_index < 0) continue;
    const v1::AttemptKey key = record.key();
    if (listed.count({key.run_id(), key.attempt()}) > 0) continue;
    if (!record.start_sent) {
      // Nothing was started yet: ask rank 0's node for a port again.
      if (node_index == 0) SendReserveLocked(record);
      continue;
    }
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("node ", name, " re-registered without ",
                              Describe(key), ": its workers are gone"),
                 /*cancel_workers=*/true);
  }
}

absl::Status Coordinator::HandleAgentMessage(int64_t session,
                                             const v1::AgentMessage& message) {
  absl::MutexLock lock(&mu_);
  NodeState* found = nodes_.FindSession(session);
  if (found == nullptr) {
    return absl::FailedPreconditionError(
        "agent session unknown or replaced by a newer registration");
  }
  NodeState& node = *found;
  node.info.set_last_seen_ms(clock_->NowMs());
  switch (message.msg_case()) {
    case v1::AgentMessage::kHeartbeat:
      HandleHeartbeatLocked(node);
      break;
    case v1::AgentMessage::kEvents:
      HandleEventsLocked(node, message.events());
      break;
    case v1::AgentMessage::kPortReserved:
      HandlePortReservedLocked(node, message.port_reserved());
      break;
    case v1::AgentMessage::kWorkerExited:
      HandleWorkerExitedLocked(node, message.worker_exited());
      break;
    case v1::AgentMessage::kRegister:
      return absl::InvalidArgumentError(
          "register: only the first message of a stream may register");
    case v1::AgentMessage::MSG_NOT_SET:
      return absl::InvalidArgumentError("empty agent message");
  }
  ScheduleLocked();
  return absl::OkStatus();
}

void Coordinator::Disconnect(int64_t session) {
  absl::MutexLock lock(&mu_);
  NodeState* ended = nodes_.Disconnect(session);
  if (ended == nullptr) return;
  NodeState& node = *ended;
  scheduler_.SetNode(node.info.name(), node.info.slots(),
                     /*schedulable=*/false);
  absl::Status saved = store_->SaveNode(node.info);
  if (!saved.ok()) LogError(saved.ToString());
  LogInfo(absl::StrFormat(
      "node %s: disconnected; its %d held slots wait up to %d s for it",
      node.info.name(), scheduler_.used_slots(node.info.name()),
      options_.node_timeout_ms / 1000));
}

void Coordinator::Tick() {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  for (auto& [name, node] : nodes_.nodes()) {
    const int64_t silent_ms = now - node.info.last_seen_ms();
    if (silent_ms < options_.node_timeout_ms) continue;
    FailRunsOnSilentNodeLocked(name, silent_ms);
    if (node.session != 0) {
      // Connected but mute: stop placing runs on it until it speaks again.
      scheduler_.SetNode(name, node.info.slots(), /*schedulable=*/false);
    }
  }
  for (auto& [run_id, record] : runs_) {
    if (record.run.state() == v1::RUN_STATE_RUNNING &&
        record.all_exited_ms != 0 &&
        now - record.all_exited_ms >= options_.exit_grace_ms) {
      MaybeFinishLocked(record, /*force=*/true);
    }
  }
  ScheduleLocked();
}

void Coordinator::FailRunsOnSilentNodeLocked(const std::string& name,
                                             int64_t silent_ms) {
  for (auto& [run_id, record] : runs_) {
    if (!IsPlaced(record.run.state()) || record.NodeIndex(name) < 0) continue;
    EndRunLocked(
        record, v1::RUN_STATE_FAILED,
        absl::StrFormat("node %s silent for %d s (timeout %d s)", name,
                        silent_ms / 1000, options_.node_timeout_ms / 1000),
        /*cancel_workers=*/true);
  }
}

void Coordinator::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

void Coordinator::HandleHeartbeatLocked(NodeState& node) {
  if (node.session != 0) {
    scheduler_.SetNode(node.info.name(), node.info.slots(),
                       /*schedulable=*/true);
  }
}

void Coordinator::HandleEventsLocked(NodeState& node,
                                     const v1::Events& events) {
  // One transaction (one synced commit) for the whole message, and acks only
  // after it: an acknowledged event survives a crash or a power loss.
  std::vector<IncomingEvent> incoming;
  std::vector<EventRow> rows;
  for (const v1::Event& event : events.events()) {
    std::optional<IncomingEvent> checked = CheckEventLocked(node, event);
    if (!checked.has_value()) continue;
    rows.push_back(checked->row);
    incoming.push_back(*std::move(checked));
  }
  if (rows.empty()) return;
  absl::StatusOr<std::vector<EventDisposition>> dispositions =
      store_->InsertEvents(rows);
  if (!dispositions.ok()) {
    // Nothing stored: no ack, the agent sends the batch again.
    LogError(absl::StrFormat("storing %d events from node %s: %s", rows.size(),
                             node.info.name(),
                             dispositions.status().ToString()));
    return;
  }
  AckBatch acks;
  std::set<int64_t> changed_runs;
  for (size_t i = 0; i < incoming.size(); ++i) {
    IngestStoredLocked(incoming[i], (*dispositions)[i], acks, changed_runs);
  }
  for (int64_t run_id : changed_runs) {
    RunRecord& record = runs_[run_id];
    record.RefreshEpochs(MetricName(record.run.spec()), /*flush=*/false);
    record.Changed("");
    MaybeFinishLocked(record, /*force=*/false);
  }
  v1::CoordinatorMessage reply = acks.Build(*store_);
  if (reply.acks().acks_size() > 0 && node.channel != nullptr) {
    node.channel->Send(reply);
  }
}

std::optional<Coordinator::IncomingEvent> Coordinator::CheckEventLocked(
    const NodeState& node, const v1::Event& event) {
  const v1::AttemptKey& key = event.key();
  const std::string where = absl::StrFormat(
      "run %d attempt %d rank %d seq %d from node %s", key.run_id(),
      key.attempt(), event.rank(), event.seq(), node.info.name());
  RunRecord* record = CurrentAttemptLocked(key);
  if (record != nullptr &&
      (!record->HostsRank(node.info.name(), event.rank()) || event.seq() < 1)) {
    LogWarning(absl::StrCat("ignoring event ", where,
                            ": that node does not host that rank, or seq < 1"));
    return std::nullopt;
  }
  IncomingEvent incoming{EventRow{}, ParseAgentEvent(event)};
  const std::string error =
      incoming.parsed.ok() ? std::string()
                           : std::string(incoming.parsed.status().message());
  if (!error.empty()) {
    LogWarning(absl::StrCat("refusing event ", where, ": ", error));
  }
  incoming.row = EventRow{key.run_id(),
                          key.attempt(),
                          event.rank(),
                          event.seq(),
                          error.empty() ? event.line() : std::string(),
                          error};
  return incoming;
}

void Coordinator::IngestStoredLocked(IncomingEvent& incoming,
                                     EventDisposition disposition,
                                     AckBatch& acks,
                                     std::set<int64_t>& changed_runs) {
  v1::AttemptKey key;
  key.set_run_id(incoming.row.run_id);
  key.set_attempt(incoming.row.attempt);
  acks.Note(key, incoming.row.rank, incoming.row.seq);
  if (disposition != EventDisposition::kStored) return;
  ++events_ingested_;
  RunRecord* record = CurrentAttemptLocked(key);
  if (record != nullptr && incoming.parsed.ok()) {
    record->tracker.Add(*std::move(incoming.parsed));
    changed_runs.insert(key.run_id());
  }
}

void Coordinator::HandlePortReservedLocked(NodeState& node,
                                           const v1::PortReserved& port) {
  RunRecord* record = CurrentAttemptLocked(port.key());
  if (record == nullptr || record->start_sent || record->nodes.empty() ||
      record->nodes.front() != node.info.name()) {
    LogWarning(absl::StrCat("node ", node.info.name(), ": ignoring a port for ",
                            Describe(port.key()), " (not awaited from it)"));
    return;
  }
  absl::StatusOr<std::string> address = RendezvousHost(port, node.info);
  if (!address.ok()) {
    EndRunLocked(*record, v1::RUN_STATE_FAILED,
                 std::string(address.status().message()),
                 /*cancel_workers=*/true);
    return;
  }
  const std::string& host = *address;
  for (size_t i = 0; i < record->nodes.size(); ++i) {
    v1::CoordinatorMessage start = record->AssignmentFor(
        v1::Assignment::PHASE_START, static_cast<int32_t>(i));
    start.mutable_assignment()->set_master_addr(host);
    start.mutable_assignment()->set_master_port(port.port());
    SendLocked(record->nodes[i], start);
  }
  const v1::Attempt& attempt = record->BeginRunning(host, port.port());
  PersistLocked(*record);
  const std::string line = absl::StrFormat(
      "attempt %d: rendezvous at %s:%d; starting %d ranks on %s",
      attempt.number(), host, port.port(), record->world_size(),
      absl::StrJoin(record->nodes, ", "));
  LogInfo(absl::StrCat("run ", record->run.id(), " ", line));
  record->Changed(line);
}

void Coordinator::HandleWorkerExitedLocked(NodeState& node,
                                           const v1::WorkerExited& exit) {
  RunRecord* record = CurrentAttemptLocked(exit.key());
  if (record == nullptr) return;  // a stale attempt or an ended run
  if (!record->HostsRank(node.info.name(), exit.rank())) {
    LogWarning(absl::StrFormat("node %s: ignoring exit of rank %d of %s",
                               node.info.name(), exit.rank(),
                               Describe(exit.key())));
    return;
  }
  v1::WorkerExited& stored = record->exits[exit.rank()];
  stored = exit;
  stored.set_stderr_tail(TailOf(exit.stderr_tail(), kMaxStderrTailBytes));
  const bool failed =
      !exit.error().empty() || exit.signal() != 0 || exit.exit_code() != 0;
  LogInfo(absl::StrFormat(
      "run %d attempt %d rank %d on node %s: %s", exit.key().run_id(),
      exit.key().attempt(), exit.rank(), node.info.name(),
      failed ? ExitError(node.info.name(), exit) : "exited 0"));
  if (failed) {
    EndRunLocked(*record, v1::RUN_STATE_FAILED,
                 ExitError(node.info.name(), stored), /*cancel_workers=*/true);
    return;
  }
  if (static_cast<int>(record->exits.size()) == record->world_size()) {
    record->all_exited_ms = clock_->NowMs();
    MaybeFinishLocked(*record, /*force=*/false);
  }
}

// ------------------------------------------------------------------ helpers

void Coordinator::ScheduleLocked() {
  for (const Scheduler::Placement& placement : scheduler_.Schedule()) {
    auto it = runs_.find(placement.run_id);
    if (it == runs_.end()) {
      scheduler_.Release(placement.run_id);
      continue;
    }
    StartAttemptLocked(it->second, placement.nodes);
  }
}

void Coordinator::StartAttemptLocked(RunRecord& record,
                                     const std::vector<std::string>& nodes) {
  const v1::Attempt& attempt = record.BeginAttempt(nodes, clock_->NowMs());
  PersistLocked(record);
  const std::string line = absl::StrFormat(
      "attempt %d: placed on %s; node %s reserves the rendezvous port",
      attempt.number(), absl::StrJoin(nodes, ", "), nodes.front());
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
  SendReserveLocked(record);
}

void Coordinator::SendReserveLocked(RunRecord& record) {
  SendLocked(record.nodes.front(),
             record.AssignmentFor(v1::Assignment::PHASE_RESERVE,
                                  /*node_rank=*/0));
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
  if (cancel_workers && record.run.attempts_size() > 0) {
    v1::CoordinatorMessage cancel;
    *cancel.mutable_cancel()->mutable_key() = record.key();
    cancel.mutable_cancel()->set_reason(error);
    for (const std::string& node : record.nodes) SendLocked(node, cancel);
  }
  scheduler_.Release(record.run.id());
  record.End(state, error, now);
  record.RefreshEpochs(MetricName(record.run.spec()), /*flush=*/true);
  PersistLocked(record);
  record.tracker.Reset();  // the events are stored; scoring is done
  const std::string line = FinalLine(record.run, MetricName(record.run.spec()));
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

void Coordinator::MaybeFinishLocked(RunRecord& record, bool force) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const int world = record.world_size();
  if (static_cast<int>(record.exits.size()) < world) return;
  if (!force && record.tracker.stopped_ranks() < world) return;
  const ConfigInfo* config =
      registry_->FindConfig(spec.workload(), spec.config());
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  if (config == nullptr || workload == nullptr) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("scoring: ", spec.workload(), "/", spec.config(),
                              " is not in this coordinator's registry"),
                 /*cancel_workers=*/false);
    return;
  }
  absl::StatusOr<v1::Score> score =
      ScoreRun(record.tracker.events(), *config, *workload);
  if (!score.ok()) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("scoring: ", score.status().message()),
                 /*cancel_workers=*/false);
    return;
  }
  absl::Status saved = store_->SaveResult(record.run.id(), *score);
  if (!saved.ok()) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("storing the result: ", saved.message()),
                 /*cancel_workers=*/false);
    return;
  }
  *record.run.mutable_score() = *score;
  EndRunLocked(record, v1::RUN_STATE_SUCCEEDED, "", /*cancel_workers=*/false);
}

void Coordinator::PersistLocked(RunRecord& record) {
  absl::Status status = store_->UpdateRun(record.run);
  if (status.ok() && record.run.attempts_size() > 0) {
    status =
        store_->SaveAttempt(record.run.id(), *record.run.attempts().rbegin());
  }
  if (!status.ok()) {
    LogError(absl::StrCat("run ", record.run.id(),
                          ": storing its state: ", status.ToString()));
  }
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

std::string Coordinator::MetricName(const v1::RunSpec& spec) const {
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  return workload != nullptr ? workload->metric : "quality";
}

}  // namespace hpcai500
