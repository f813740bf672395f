// What the Coordinator's parts (attempts.h, run_scoring.h,
// agent_sessions.h) share: the borrowed store, clock and registry, the
// options, and the state guarded by the Coordinator's one mutex (the
// scheduler, the runs held in memory, the node table, the event intake,
// the maintenance window), with the few steps every part takes on them:
// store a run or a node, send to a node, find a run, show a node.
//
// Not thread-safe: every part holds `mu` (the Coordinator's public methods
// take it) while it reads or changes the guarded members.
#ifndef HPCAI500_SERVER_COORDINATOR_COORDINATOR_STATE_H_
#define HPCAI500_SERVER_COORDINATOR_COORDINATOR_STATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/event_intake.h"
#include "server/coordinator/maintenance.h"
#include "server/coordinator/node_health_options.h"
#include "server/coordinator/node_table.h"
#include "server/coordinator/run_record.h"
#include "server/coordinator/scheduler.h"
#include "server/coordinator/series_changes.h"
#include "server/store/store.h"

namespace hpcai500 {

struct CoordinatorOptions {
  // A node silent this long (disconnected or no heartbeat) loses its
  // attempts: each run on it is requeued (while it has retries) or fails.
  int64_t node_timeout_ms = 60'000;
  // Told to agents in Registered.
  int32_t heartbeat_interval_ms = 5'000;
  // After every rank exited 0, how long to wait for the last events (each
  // rank's run_stop) before scoring with what arrived.
  int64_t exit_grace_ms = 10'000;
  // The queues (server/coordinator/queues.h); empty: one queue, "default",
  // over every node.
  std::vector<Scheduler::Queue> queues;
  // A node that is down (disconnected, or its agent left) and holds no
  // slots is forgotten once its agent has been silent this long: taken out
  // of the node table and the store (each Slurm allocation's pilot agents
  // leave a NODE-JOBID row otherwise). A node an admin drained stays until
  // it leaves or is resumed. 0: nodes are kept for ever.
  int64_t node_retention_ms = 24 * 3600 * 1000;
  // Called, with the coordinator's lock held, for each change point in a
  // metric's bad direction that a run's end reveals (hpcai500d's
  // --change-webhook queues it); must not block. Null: none.
  std::function<void(const v1::ChangePoint&)> on_regression;
  // Pre-flights, stragglers and flags (server/coordinator/node_health.h).
  NodeHealthOptions node_health;
};

struct CoordinatorState {
  // The store, clock and registry are borrowed and must outlive the state.
  CoordinatorState(Store* store, Clock* clock, const Registry* registry,
                   CoordinatorOptions options);

  // Saves the run's state and its current attempt; on failure marks it
  // unsaved for Coordinator::Tick to save again.
  void PersistLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Hands `message` to the node's agent; logs it dropped when the node is
  // not connected.
  void SendLocked(const std::string& node, const v1::CoordinatorMessage& m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The record of an active run whose current attempt is `key`, else null.
  RunRecord* CurrentAttemptLocked(const v1::AttemptKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The run's record, loaded from the store into `runs` (for watchers)
  // when it is not there. NotFound.
  absl::StatusOr<RunRecord*> RecordLocked(int64_t run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The node as ListNodes shows it: state (idle, busy, draining, drained,
  // down) with its reason, used slots, queues.
  v1::Node NodeViewLocked(const NodeTable::Node& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Stores the node with its state (an error is logged).
  void SaveNodeLocked(const NodeTable::Node& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // Tells the scheduler what a registered node offers.
  void OfferNodeLocked(const v1::Node& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The quality metric of the spec's workload ("quality" when unknown).
  std::string MetricName(const v1::RunSpec& spec) const;
  // What the scheduler needs of a run (its queue, priority, gang, GPUs,
  // constraints, time limit, hold).
  static Scheduler::Request RequestFor(const v1::Run& run);

  // Constant after construction.
  Store* const store;
  Clock* const clock;
  const Registry* const registry;
  const CoordinatorOptions options;
  // The change points of every run series: its own lock, taken after mu
  // (a run's end) or alone (reads).
  SeriesChanges changes;

  absl::Mutex mu;
  Scheduler scheduler ABSL_GUARDED_BY(mu);
  // Active runs, and ended ones that were active or watched since this
  // process started.
  std::map<int64_t, RunRecord> runs ABSL_GUARDED_BY(mu);
  NodeTable nodes ABSL_GUARDED_BY(mu);
  EventIntake intake ABSL_GUARDED_BY(mu);
  Maintenance maintenance ABSL_GUARDED_BY(mu);
  bool shutdown ABSL_GUARDED_BY(mu) = false;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_COORDINATOR_STATE_H_
