// AgentSessions: the coordinator's side of the agents' streams. It
// registers an agent (refusing a second one under a live node's name),
// reconciles what a returning agent runs with what the coordinator expects
// of it, and takes what agents report: heartbeats, events, the rendezvous
// port (which starts the attempt's ranks), worker exits, leaving. Silent
// nodes lose their attempts; nodes gone past their retention are forgotten.
//
// Not thread-safe: a part of the Coordinator, called with its state's mutex
// held. Messages are handed to the agents' channels with it held.
#ifndef HPCAI500_SERVER_COORDINATOR_AGENT_SESSIONS_H_
#define HPCAI500_SERVER_COORDINATOR_AGENT_SESSIONS_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/attempts.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/node_table.h"
#include "server/coordinator/run_scoring.h"

namespace hpcai500 {

class AgentSessions {
 public:
  // `state`, `attempts` and `scoring` are borrowed and must outlive this.
  AgentSessions(CoordinatorState* state, Attempts* attempts,
                RunScoring* scoring)
      : state_(*state), attempts_(*attempts), scoring_(*scoring) {}

  AgentSessions(const AgentSessions&) = delete;
  AgentSessions& operator=(const AgentSessions&) = delete;

  // Coordinator::Connect, HandleAgentMessage, Disconnect and SetMaintenance
  // (coordinator.h says what each does and answers), once the request is
  // validated and the lock taken.
  absl::StatusOr<int64_t> ConnectLocked(const v1::Register& request,
                                        AgentChannel* channel)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  absl::Status HandleMessageLocked(int64_t session,
                                   const v1::AgentMessage& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  void DisconnectLocked(int64_t session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  absl::StatusOr<v1::MaintenanceWindow> SetMaintenanceLocked(
      int64_t duration_ms, const std::string& reason, const std::string& by)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Requeues (or fails) the placed runs with a gang on `name`, silent for
  // `silent_ms`.
  void LoseRunsOnSilentNodeLocked(const std::string& name, int64_t silent_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Removes from the node table, the scheduler and the store each node that
  // is disconnected, holds no slots, is not drained (unless it left) and
  // was last heard from node_retention_ms or more before `now`; logs each.
  void ForgetGoneNodesLocked(int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

 private:
  // Makes what a (re-)registered agent runs agree with what the coordinator
  // expects of it: cancels attempts it should not run (fencing), asks again
  // for a port not yet reported, requeues (or fails) attempts with a rank
  // the agent no longer has and whose exit is not stored.
  void ReconcileLocked(const v1::Register& request, AgentChannel* channel)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Marks the node schedulable again and answers with a heartbeat, so its
  // agent knows the coordinator hears it.
  void HandleHeartbeatLocked(NodeTable::Node& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Takes a batch in (EventIntake) and gives each run its new lines.
  void HandleEventsLocked(NodeTable::Node& node, const v1::Events& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Rank 0's node reserved the rendezvous port: the attempt's ranks start.
  void HandlePortReservedLocked(NodeTable::Node& node,
                                const v1::PortReserved& port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // For a launcher run (spec.launcher mpirun or srun): every node of the
  // attempt, with its address, ranks, workdir, checkpoint root and iface,
  // into rank 0's PHASE_START `assignment`. Nothing for launcher agent.
  void AddLaunchNodesLocked(const RunRecord& record,
                            v1::Assignment& assignment) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  void HandleWorkerExitedLocked(NodeTable::Node& node,
                                const v1::WorkerExited& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The node's agent leaves for good: the node takes nothing new (until it
  // registers again) and each run placed on it loses its attempt now
  // (RetryOrFailLocked), not after the node timeout.
  void HandleLeavingLocked(NodeTable::Node& node, const v1::Leaving& leaving)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Acknowledges `exit` (stored, or fenced and dropped) to `node`.
  void AckExitLocked(NodeTable::Node& node, const v1::WorkerExited& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
  Attempts& attempts_;
  RunScoring& scoring_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_AGENT_SESSIONS_H_
