// The agents' streams, on the coordinator's side: see agent_sessions.h.
#include "server/coordinator/agent_sessions.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/status_macros.h"
#include "methodology/spec.h"
#include "server/coordinator/requests.h"
#include "server/coordinator/run_log.h"

namespace hpcai500 {
namespace {

// How much of an agent's Leaving.reason is kept.
constexpr size_t kMaxLeaveReasonBytes = 256;

}  // namespace

absl::StatusOr<int64_t> AgentSessions::ConnectLocked(
    const v1::Register& request, AgentChannel* channel) {
  // A node whose stream is open and not past the node timeout keeps it: a
  // second agent under its name (a copy of its token) is refused, not let
  // in to replace it. A stream that ended (a stopped agent's socket
  // closes), or fell silent past the timeout, is replaced.
  const int64_t now = state_.clock->NowMs();
  if (auto it = state_.nodes.nodes().find(request.name());
      it != state_.nodes.nodes().end() && it->second.session != 0 &&
      !it->second.leaving) {
    const int64_t silent_ms = now - it->second.info.last_seen_ms();
    if (silent_ms < state_.options.node_timeout_ms) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "node %s is connected and was heard %.1f s ago; a second agent "
          "cannot take its name while its stream lives (stop that agent, or "
          "wait until it has been silent for the node timeout, %d s)",
          request.name(), silent_ms / 1000.0,
          state_.options.node_timeout_ms / 1000));
    }
  }
  bool replaced = false;
  NodeTable::Node& node =
      state_.nodes.Connect(request, channel, now, &replaced);
  const v1::Node& info = node.info;
  if (replaced) {
    LogInfo(absl::StrCat("node ", request.name(),
                         ": registered again; the previous stream, silent, is "
                         "replaced"));
  }
  state_.OfferNodeLocked(info);
  state_.scheduler.SetSchedulable(info.name(), true);
  state_.SaveNodeLocked(node);
  LogInfo(absl::StrFormat(
      "node %s: registered (%s, %d slots, %d cpus, %d gpus, %d attempts "
      "running)",
      info.name(), info.address(), info.slots(), info.cpus(), info.gpus(),
      request.running_size()));

  v1::CoordinatorMessage registered;
  registered.mutable_registered()->set_node(info.name());
  registered.mutable_registered()->set_heartbeat_interval_ms(
      state_.options.heartbeat_interval_ms);
  registered.mutable_registered()->set_node_timeout_ms(
      state_.options.node_timeout_ms);
  registered.mutable_registered()->set_maintenance_until_ms(
      state_.maintenance.until_ms());
  channel->Send(registered);

  ReconcileLocked(request, channel);
  attempts_.ScheduleLocked();
  return node.session;
}

void AgentSessions::ReconcileLocked(const v1::Register& request,
                                    AgentChannel* channel) {
  const std::string& name = request.name();
  // (run, attempt) -> the ranks the agent still has, running or exited.
  std::map<std::pair<int64_t, int32_t>, std::set<int32_t>> listed;
  for (const v1::RunningAttempt& running : request.running()) {
    std::set<int32_t>& ranks =
        listed[{running.key().run_id(), running.key().attempt()}];
    ranks.insert(running.ranks().begin(), running.ranks().end());
    ranks.insert(running.exited_ranks().begin(), running.exited_ranks().end());
    if (state_.CurrentAttemptLocked(running.key()) == nullptr) {
      v1::CoordinatorMessage cancel;
      *cancel.mutable_cancel()->mutable_key() = running.key();
      cancel.mutable_cancel()->set_reason(absl::StrCat(
          Describe(running.key()), " is not running on the coordinator"));
      channel->Send(cancel);
      LogInfo(absl::StrCat("node ", name, ": cancelling its ",
                           Describe(running.key()), " (not current: fenced)"));
    }
  }
  for (auto& [run_id, record] : state_.runs) {
    if (!IsPlaced(record.run.state())) continue;
    const int node_index = record.NodeIndex(name);
    if (node_index < 0) continue;
    const v1::AttemptKey key = record.key();
    if (!record.start_sent) {
      // Nothing was started yet: ask rank 0's node for a port again.
      if (node_index == 0) attempts_.SendReserveLocked(record);
      continue;
    }
    const std::set<int32_t>& has = listed[{key.run_id(), key.attempt()}];
    const int rpn = record.run.spec().ranks_per_node();
    for (int32_t rank = node_index * rpn; rank < (node_index + 1) * rpn;
         ++rank) {
      if (has.count(rank) > 0 || record.exits.count(rank) > 0) continue;
      attempts_.RetryOrFailLocked(
          record, absl::StrFormat("node %s registered again without rank %d "
                                  "of %s: its worker is gone",
                                  name, rank, Describe(key)));
      break;
    }
  }
}

absl::Status AgentSessions::HandleMessageLocked(
    int64_t session, const v1::AgentMessage& message) {
  NodeTable::Node* found = state_.nodes.FindSession(session);
  if (found == nullptr) {
    return absl::FailedPreconditionError(
        "agent session unknown or replaced by a newer registration");
  }
  NodeTable::Node& node = *found;
  node.info.set_last_seen_ms(state_.clock->NowMs());
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
    case v1::AgentMessage::kLeaving:
      HandleLeavingLocked(node, message.leaving());
      break;
    case v1::AgentMessage::kPreflightDone:
      break;  // node health's (Coordinator::HandleAgentMessage)
    case v1::AgentMessage::kRegister:
      return absl::InvalidArgumentError(
          "register: only the first message of a stream may register");
    case v1::AgentMessage::MSG_NOT_SET:
      return absl::InvalidArgumentError("empty agent message");
  }
  attempts_.ScheduleLocked();
  return absl::OkStatus();
}

void AgentSessions::DisconnectLocked(int64_t session) {
  NodeTable::Node* ended = state_.nodes.Disconnect(session);
  if (ended == nullptr) return;
  NodeTable::Node& node = *ended;
  state_.scheduler.SetSchedulable(node.info.name(), false);
  state_.SaveNodeLocked(node);
  LogInfo(absl::StrFormat(
      "node %s: disconnected; its %d held slots wait up to %d s for it",
      node.info.name(), state_.scheduler.used_slots(node.info.name()),
      state_.options.node_timeout_ms / 1000));
}

absl::StatusOr<v1::MaintenanceWindow> AgentSessions::SetMaintenanceLocked(
    int64_t duration_ms, const std::string& reason, const std::string& by) {
  ASSIGN_OR_RETURN(
      v1::MaintenanceWindow window,
      state_.maintenance.Set(duration_ms, reason, by, state_.clock->NowMs()));
  if (window.until_ms() == 0) {
    LogInfo(absl::StrCat("maintenance window ended by ", by));
  } else {
    LogInfo(absl::StrFormat(
        "maintenance window on for %d s, by %s (%s): no node is lost for "
        "silence, and no agent fences, before its end plus the node timeout",
        duration_ms / 1000, by, reason.empty() ? "no reason given" : reason));
  }
  // An agent not connected now hears of it in Registered.
  v1::CoordinatorMessage told;
  *told.mutable_maintenance() = window;
  for (const auto& [name, node] : state_.nodes.nodes()) {
    if (node.session != 0) state_.nodes.Send(name, told);
  }
  return window;
}

void AgentSessions::ForgetGoneNodesLocked(int64_t now) {
  if (state_.options.node_retention_ms <= 0) return;
  std::vector<std::string> gone;
  for (const auto& [name, node] : state_.nodes.nodes()) {
    if (node.session != 0 || state_.scheduler.used_slots(name) > 0) continue;
    // An admin's drain (and its reason) outlives the agent's absence.
    if (node.draining && !node.leaving) continue;
    if (now - node.LastHeardMs() < state_.options.node_retention_ms) continue;
    gone.push_back(name);
  }
  for (const std::string& name : gone) {
    const NodeTable::Node& node = state_.nodes.nodes().at(name);
    const std::string line = absl::StrCat(
        "node ", name, ": forgotten, silent for ",
        absl::FormatDuration(absl::Seconds((now - node.LastHeardMs()) / 1000)),
        " (", state_.NodeViewLocked(node).state_reason(), "; node retention ",
        absl::FormatDuration(
            absl::Milliseconds(state_.options.node_retention_ms)),
        ")");
    // Forgotten here even when the store fails: a row left there is
    // restored and forgotten again after a restart.
    if (absl::Status deleted = state_.store->DeleteNode(name); !deleted.ok()) {
      LogError(absl::StrCat("node ", name, ": ", deleted.ToString()));
    }
    state_.scheduler.RemoveNode(name);
    state_.nodes.Remove(name);
    LogInfo(line);
  }
}

void AgentSessions::LoseRunsOnSilentNodeLocked(const std::string& name,
                                               int64_t silent_ms) {
  for (auto& [run_id, record] : state_.runs) {
    if (!IsPlaced(record.run.state()) || record.NodeIndex(name) < 0) continue;
    attempts_.RetryOrFailLocked(
        record, absl::StrFormat("node %s silent for %d s (timeout %d s)", name,
                                silent_ms / 1000,
                                state_.options.node_timeout_ms / 1000));
  }
}

void AgentSessions::HandleHeartbeatLocked(NodeTable::Node& node) {
  if (node.session == 0) return;
  if (!node.leaving) state_.scheduler.SetSchedulable(node.info.name(), true);
  v1::CoordinatorMessage answer;
  answer.mutable_heartbeat()->set_time_ms(state_.clock->NowMs());
  node.channel->Send(answer);
}

void AgentSessions::HandleEventsLocked(NodeTable::Node& node,
                                       const v1::Events& events) {
  const EventIntake::Runs runs{
      [this](const v1::AttemptKey& key) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return state_.CurrentAttemptLocked(key);
      },
      [this](const v1::AttemptKey& key, const std::string& name, int32_t rank)
          ABSL_NO_THREAD_SAFETY_ANALYSIS {
            auto run = state_.runs.find(key.run_id());
            return run != state_.runs.end() &&
                   run->second.HostedRank(key.attempt(), name, rank);
          }};
  IntakeResult taken =
      state_.intake.Take(node.info.name(), node.leaving, events, runs);
  for (RunRecord* record : taken.unstored) record->events_unstored = true;
  std::set<int64_t> changed_runs;
  for (auto& [record, line] : taken.fresh) {
    if (line.key == event_keys::kResume && line.rank == 0) {
      scoring_.NoteResumeLocked(*record, line);
    }
    changed_runs.insert(record->run.id());
    record->tracker.Add(std::move(line));
  }
  for (int64_t run_id : changed_runs) {
    RunRecord& record = state_.runs[run_id];
    record.RefreshEpochs(state_.MetricName(record.run.spec()), /*flush=*/false);
    record.Changed("");
    scoring_.ForecastLocked(record);
    scoring_.MaybeFinishLocked(record, /*force=*/false);
  }
  if (taken.reply.acks().acks_size() > 0 && node.channel != nullptr) {
    node.channel->Send(taken.reply);
  }
}

void AgentSessions::HandlePortReservedLocked(NodeTable::Node& node,
                                             const v1::PortReserved& port) {
  RunRecord* record = state_.CurrentAttemptLocked(port.key());
  if (record == nullptr || record->start_sent || record->nodes.empty() ||
      record->nodes.front() != node.info.name()) {
    LogWarning(absl::StrCat("node ", node.info.name(), ": ignoring a port for ",
                            Describe(port.key()), " (not awaited from it)"));
    return;
  }
  absl::StatusOr<std::string> address = RendezvousHost(port, node.info);
  if (!address.ok()) {
    attempts_.EndRunLocked(*record, v1::RUN_STATE_FAILED,
                           std::string(address.status().message()),
                           /*cancel_workers=*/true);
    return;
  }
  const std::string& host = *address;
  attempts_.ResumeFromFoundLocked(*record, port);
  // Saved before it is sent: after a crash in between, the agents do not
  // list the attempt when they register again and it is requeued.
  const v1::Attempt& attempt = record->BeginRunning(host, port.port());
  state_.PersistLocked(*record);
  for (size_t i = 0; i < record->nodes.size(); ++i) {
    v1::CoordinatorMessage start = record->AssignmentFor(
        v1::Assignment::PHASE_START, static_cast<int32_t>(i));
    start.mutable_assignment()->set_master_addr(host);
    start.mutable_assignment()->set_master_port(port.port());
    if (i == 0) AddLaunchNodesLocked(*record, *start.mutable_assignment());
    state_.SendLocked(record->nodes[i], start);
  }
  const std::string line = absl::StrFormat(
      "attempt %d: rendezvous at %s:%d; starting %d ranks on %s",
      attempt.number(), host, port.port(), record->world_size(),
      absl::StrJoin(record->nodes, ", "));
  LogInfo(absl::StrCat("run ", record->run.id(), " ", line));
  record->Changed(line);
}

void AgentSessions::AddLaunchNodesLocked(const RunRecord& record,
                                         v1::Assignment& assignment) const {
  absl::StatusOr<Launcher> launcher =
      ParseLauncher("launcher", record.run.spec().launcher());
  if (!launcher.ok() || *launcher == Launcher::kAgent) return;
  for (size_t i = 0; i < record.nodes.size(); ++i) {
    const v1::Assignment ranks =
        record
            .AssignmentFor(v1::Assignment::PHASE_START, static_cast<int32_t>(i))
            .assignment();
    v1::LaunchNode* node = assignment.add_launch_nodes();
    node->set_name(record.nodes[i]);
    *node->mutable_ranks() = ranks.ranks();
    auto it = state_.nodes.nodes().find(record.nodes[i]);
    if (it == state_.nodes.nodes().end()) continue;  // the agent refuses it
    // A pilot agent (deploy/slurm/agents.sbatch) is named NODE-JOBID; srun
    // needs Slurm's own node name, which it carries as a label.
    const auto& labels = it->second.info.labels();
    if (auto slurm = labels.find(kSlurmNodeLabel);
        slurm != labels.end() && !slurm->second.empty()) {
      node->set_name(slurm->second);
    }
    node->set_address(it->second.info.address());
    node->set_workdir(it->second.workdir);
    node->set_checkpoint_root(it->second.checkpoint_root);
    node->set_cpus(it->second.info.cpus());
    node->set_iface(it->second.iface);
  }
}

void AgentSessions::HandleWorkerExitedLocked(NodeTable::Node& node,
                                             const v1::WorkerExited& exit) {
  RunRecord* record = state_.CurrentAttemptLocked(exit.key());
  if (record == nullptr) {
    // A stale attempt or an ended run: fenced, acknowledged, dropped.
    AckExitLocked(node, exit);
    return;
  }
  if (!record->HostsRank(node.info.name(), exit.rank())) {
    LogWarning(absl::StrFormat("node %s: ignoring exit of rank %d of %s",
                               node.info.name(), exit.rank(),
                               Describe(exit.key())));
    return;
  }
  if (record->exits.count(exit.rank()) > 0) {
    AckExitLocked(node, exit);  // sent again after a reconnect
    return;
  }
  v1::WorkerExited stored = exit;
  stored.set_stderr_tail(TailOf(exit.stderr_tail(), kMaxStderrTailBytes));
  if (absl::Status saved = state_.store->SaveExit(stored); !saved.ok()) {
    // Not acknowledged: the agent reports it again when it reconnects.
    LogError(absl::StrCat("storing the exit of rank ", exit.rank(), " of ",
                          Describe(exit.key()), ": ", saved.ToString()));
    return;
  }
  record->exits[exit.rank()] = stored;
  AckExitLocked(node, exit);
  const bool failed =
      !exit.error().empty() || exit.signal() != 0 || exit.exit_code() != 0;
  LogInfo(absl::StrFormat(
      "run %d attempt %d rank %d on node %s: %s", exit.key().run_id(),
      exit.key().attempt(), exit.rank(), node.info.name(),
      failed ? ExitError(node.info.name(), exit) : "exited 0"));
  if (!exit.cancelled().empty()) {
    // The site's scheduler stopped it (a scancelled Slurm step): the run
    // ends as a user's cancel does, not as a failure or a lost attempt.
    attempts_.EndRunLocked(*record, v1::RUN_STATE_CANCELLED,
                           absl::StrCat("cancelled on node ", node.info.name(),
                                        ": ", exit.cancelled()),
                           /*cancel_workers=*/true);
    return;
  }
  if (failed) {
    std::string why = ExitError(node.info.name(), stored);
    // A peer's loss fails the other ranks' collectives before the lost node
    // times out: a rank failing while a node of its gang is disconnected
    // counts as lost too.
    std::string gone;
    for (const std::string& name : record->nodes) {
      auto it = state_.nodes.nodes().find(name);
      if (it != state_.nodes.nodes().end() && it->second.session == 0)
        gone = name;
    }
    if (!gone.empty()) {
      absl::StrAppend(&why, " while node ", gone, " of its gang is away");
    }
    if (IsLostWorker(stored) || !gone.empty()) {
      attempts_.RetryOrFailLocked(*record, why);
    } else {
      attempts_.EndRunLocked(*record, v1::RUN_STATE_FAILED, why,
                             /*cancel_workers=*/true);
    }
    return;
  }
  if (static_cast<int>(record->exits.size()) == record->world_size()) {
    record->all_exited_ms = state_.clock->NowMs();
    scoring_.MaybeFinishLocked(*record, /*force=*/false);
  }
}

void AgentSessions::HandleLeavingLocked(NodeTable::Node& node,
                                        const v1::Leaving& leaving) {
  const std::string& name = node.info.name();
  node.leaving = true;
  // From the remote side: kept short, and never empty in the node's state.
  node.leave_reason = leaving.reason().substr(0, kMaxLeaveReasonBytes);
  if (node.leave_reason.empty()) node.leave_reason = "no reason given";
  state_.scheduler.SetSchedulable(name, false);
  state_.SaveNodeLocked(node);
  int lost = 0;
  for (auto& [run_id, record] : state_.runs) {
    if (!IsPlaced(record.run.state()) || record.NodeIndex(name) < 0) continue;
    attempts_.RetryOrFailLocked(
        record, absl::StrFormat("node %s left (%s)", name, node.leave_reason));
    ++lost;
  }
  LogInfo(
      absl::StrFormat("node %s: leaving (%s); %d run(s) on it lost their "
                      "attempt",
                      name, node.leave_reason, lost));
}

void AgentSessions::AckExitLocked(NodeTable::Node& node,
                                  const v1::WorkerExited& exit) {
  if (node.channel == nullptr) return;
  v1::CoordinatorMessage ack;
  v1::ExitAck* exit_ack = ack.mutable_acks()->add_exits();
  *exit_ack->mutable_key() = exit.key();
  exit_ack->set_rank(exit.rank());
  node.channel->Send(ack);
}

}  // namespace hpcai500
