// The agents' half of the Coordinator: sessions (Connect, Disconnect,
// reconciling what a returning agent runs) and what agents report (events,
// reserved ports, worker exits). Declared in coordinator.h; the queue,
// scheduling and run ends are in coordinator.cc.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/scoring.h"
#include "common/status_macros.h"
#include "server/coordinator.h"
#include "server/leaderboard.h"
#include "server/metrics.h"
#include "server/requests.h"
#include "server/run_log.h"

namespace hpcai500 {

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
  IncomingEvent incoming{key, record, EventRow{}, ParseAgentEvent(event)};
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
  acks.Note(incoming.key, incoming.row.rank, incoming.row.seq);
  if (disposition != EventDisposition::kStored) return;
  ++events_ingested_;
  if (incoming.record != nullptr && incoming.parsed.ok()) {
    incoming.record->tracker.Add(*std::move(incoming.parsed));
    changed_runs.insert(incoming.key.run_id());
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

}  // namespace hpcai500
