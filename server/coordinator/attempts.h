// Attempts: how a run's attempts begin and end. It places queued runs on
// free nodes (each placement a new attempt that resumes from the newest
// checkpoint its gang can reach, its rank 0's node asked for a rendezvous
// port), keeps each queued run's waiting reason, ends runs, requeues a lost
// attempt while the run has retries (else fails it) and stops attempts
// past their time limit. docs/design.md "Nothing lost" says why.
//
// Not thread-safe: a part of the Coordinator, called with its state's mutex
// held. Messages are handed to the agents' channels with it held.
#ifndef HPCAI500_SERVER_COORDINATOR_ATTEMPTS_H_
#define HPCAI500_SERVER_COORDINATOR_ATTEMPTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/histogram.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/node_health.h"
#include "server/coordinator/run_record.h"

namespace hpcai500 {

class Attempts {
 public:
  // `state` and `health` are borrowed and must outlive this; a run's end
  // is shown to `health` (stragglers).
  Attempts(CoordinatorState* state, NodeHealth* health)
      : state_(*state), health_(*health) {}

  Attempts(const Attempts&) = delete;
  Attempts& operator=(const Attempts&) = delete;

  // Starts an attempt of each run the scheduler places now and, after a
  // scheduling pass, copies each queued run's waiting reason into it.
  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Asks the current attempt's rank 0 node for a rendezvous port
  // (PHASE_RESERVE), naming the earlier attempt whose checkpoints it should
  // look for.
  void SendReserveLocked(RunRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Ends the run in a final state, releasing its slots; cancels its workers
  // when `cancel_workers`.
  void EndRunLocked(RunRecord& record, v1::RunState state,
                    const std::string& error, bool cancel_workers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The current attempt was lost (`why`: a node lost or silent, a rank
  // killed by a signal): cancels its workers and requeues the run for a new
  // attempt while it has retries (spec max_retries), else fails it.
  void RetryOrFailLocked(RunRecord& record, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Before the current attempt starts: resumes it from the newest of the
  // checkpoints its agent found (`port`) that passes VerifyFoundCheckpoint,
  // storing that checkpoint's event lines as the probed attempt's; each
  // one refused gets a line in the run's log saying why.
  void ResumeFromFoundLocked(RunRecord& record, const v1::PortReserved& port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Fails placed runs whose current attempt ran past the spec's time_limit.
  void EnforceTimeLimitsLocked(int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // How long each scheduling pass took (thread-safe itself: /metrics).
  const Histogram& scheduler_pass() const { return scheduler_pass_; }

 private:
  void StartAttemptLocked(RunRecord& record,
                          const std::vector<std::string>& nodes,
                          bool backfilled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Copies each queued run's waiting reason from the scheduler.
  void NoteWaitingReasonsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Tells the current attempt's nodes to cancel its workers (a node not
  // connected gets the cancel when it registers again:
  // AgentSessions::ReconcileLocked).
  void CancelWorkersLocked(const RunRecord& record, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Where a new attempt of `record` on `gang` resumes: the newest
  // checkpoint rank 0 of the last attempt reported (or the one that attempt
  // resumed from), when every node of `gang` shares checkpoints or the gang
  // is the one node that wrote it; {0, 0} (start fresh) otherwise.
  std::pair<int32_t, int32_t> ResumePointLocked(
      const RunRecord& record, const std::vector<std::string>& gang)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Whether `gang` can read the checkpoints `writer_node` wrote: every node
  // of it shares checkpoints, or it is that one node.
  bool GangReachesLocked(const std::vector<std::string>& gang,
                         const std::string& writer_node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The earlier attempt whose checkpoint folder rank 0's agent of the
  // current attempt looks into for checkpoints newer than the resume point
  // (Assignment.probe_checkpoints_attempt): the previous attempt when the
  // gang reaches its checkpoints, else 0.
  int32_t ProbeAttemptLocked(const RunRecord& record) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
  NodeHealth& health_;
  Histogram scheduler_pass_{{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                             0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_ATTEMPTS_H_
