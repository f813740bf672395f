// RunRecord: what the coordinator holds in memory of one run (the run as
// stored, its current attempt's gang, exits and events, and the log that
// watchers read) and the changes of state that touch only that run. The
// Coordinator decides when they happen; this file says what each one
// changes.
//
// Not thread-safe: the Coordinator's mutex guards every record.
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_RECORD_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/run_state.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/run_tracker.h"

namespace hpcai500 {

// Whether a run in `state` holds nodes (starting or running).
bool IsPlaced(v1::RunState state);

// Where a watcher is in a run's update stream.
struct RunWatchCursor {
  int64_t version = -1;
  size_t log_sent = 0;
};

struct RunRecord {
  // A record of a run read back from the store: its log rebuilt from the
  // stored epoch summaries and, once ended, its final line. `metric` names
  // the workload's quality metric in those lines.
  static RunRecord FromStored(v1::Run run, const std::string& metric);

  // The key of the current attempt (attempt 0 before the first).
  v1::AttemptKey key() const;
  // nodes x ranks per node of the run's spec.
  int world_size() const;
  // A queued run of a new submission, its log opened with "queued: ...".
  static RunRecord Queued(int64_t id, int64_t submission_id, int repetition,
                          v1::RunSpec spec, int64_t now_ms);

  // The position of `node` in the current attempt's gang (0 hosts rank 0),
  // or -1 when it is not in it.
  int NodeIndex(const std::string& node) const;
  // Whether `node` hosts `rank` in the current attempt's gang.
  bool HostsRank(const std::string& node, int32_t rank) const;
  // Whether `node` hosted `rank` in attempt `attempt` (any attempt the run
  // has had, the current one included).
  bool HostedRank(int32_t attempt, const std::string& node, int32_t rank) const;

  // The assignment of the current attempt's ranks on its `node_rank`-th
  // node in `phase`; the caller adds the rendezvous address to a START.
  v1::CoordinatorMessage AssignmentFor(v1::Assignment::Phase phase,
                                       int32_t node_rank) const;

  // Adds the next attempt on `nodes` (rank 0's node first), to resume from
  // epoch `resume_from_epoch` of attempt `resume_from_attempt` (0: start
  // fresh), forgets what the previous one left (exits, events, epochs) and
  // marks the run STARTING. Returns the new attempt, valid until the run's
  // attempts change.
  v1::Attempt& BeginAttempt(const std::vector<std::string>& nodes,
                            int64_t now_ms, int32_t resume_from_attempt = 0,
                            int32_t resume_from_epoch = 0);
  // The current attempt; the run has one.
  v1::Attempt& current_attempt();
  // Records the rendezvous address of the current attempt (there is one)
  // and marks the run RUNNING. Returns that attempt.
  v1::Attempt& BeginRunning(const std::string& host, int32_t port);
  // Marks the run and its current attempt (if any) ended in `state`, with
  // `error` unless it succeeded.
  void End(v1::RunState state, const std::string& error, int64_t now_ms);
  // Ends the current attempt as "requeued" because of `why` and puts the
  // run back to QUEUED, holding no nodes, for its next attempt. The epochs
  // shown stay until that attempt begins.
  void Requeue(const std::string& why, int64_t now_ms);

  // Copies carried_epochs and the tracker's epoch summaries into `run` and
  // appends a log line for each epoch of the tracker that became complete
  // (every epoch not yet logged when `flush`). No-op while the tracker holds
  // no event.
  void RefreshEpochs(const std::string& metric, bool flush);
  // Appends `log_line` (unless empty) and wakes the watchers.
  void Changed(std::string log_line);
  // What changed after `cursor` (the run now, the new log lines, final once
  // it ended), advancing `cursor`; nullopt when nothing did.
  std::optional<v1::RunUpdate> UpdateSince(RunWatchCursor& cursor) const;

  v1::Run run;                     // authoritative while in memory
  std::vector<std::string> nodes;  // current attempt's gang, node-major
  bool start_sent = false;         // PHASE_START went out
  std::map<int32_t, v1::WorkerExited> exits;  // by rank
  int64_t all_exited_ms = 0;
  RunTracker tracker;  // the current attempt's events
  // Storing some of the current attempt's events failed: the tracker may
  // lack them or get them out of order, so scoring waits until they are all
  // stored and then reads them back from the store.
  bool events_unstored = false;
  // Storing the run's state failed; Coordinator::Tick saves it again.
  bool unsaved = false;
  // The run waits to be scored until events named below are stored; said
  // once in its log.
  bool waiting_for_events = false;
  // A resumed attempt: the epochs it keeps from earlier attempts.
  std::vector<v1::EpochSummary> carried_epochs;
  std::vector<std::string> log;
  int64_t version = 0;

 private:
  // Sets the per-attempt state for a new attempt on `gang` (empty: none):
  // what the previous attempt left (its exits, events, the flags about
  // storing them) is forgotten.
  void ForgetAttempt(std::vector<std::string> gang);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_RECORD_H_
