// The coordinator: it keeps the agents' sessions, places queued runs on
// nodes and drives each attempt's two-phase rendezvous, its events and its
// end. Everything else is delegated to plain parts: Scheduler (placement
// rule), Store (persistence), NodeTable (nodes and sessions), RunRecord and
// RunTracker (one run's state and epochs), requests.h (input checks),
// event_intake.h, ScoreRun, BuildLeaderboard and PrometheusText. The gRPC
// services and the HTTP front end only convert and call into it; tests drive
// it directly with fake agent channels and a fake clock.
//
// Thread-safe: every public method may be called from any thread. Messages to
// agents are handed to their AgentChannel with mu_ held, so Send() must only
// queue, never block or call back.
#ifndef HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_
#define HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/histogram.h"
#include "common/registry.h"
#include "common/scoring.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/event_intake.h"
#include "server/coordinator/maintenance.h"
#include "server/coordinator/node_table.h"
#include "server/coordinator/queues.h"
#include "server/coordinator/run_reads.h"
#include "server/coordinator/run_record.h"
#include "server/coordinator/scheduler.h"
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
  // The queues (server/coordinator/queues.h); empty: one queue, "default", over
  // every node.
  std::vector<Scheduler::Queue> queues;
  // A node that is down (disconnected, or its agent left) and holds no
  // slots is forgotten once its agent has been silent this long: taken out
  // of the node table and the store (each Slurm allocation's pilot agents
  // leave a NODE-JOBID row otherwise). A node an admin drained stays until
  // it leaves or is resumed. 0: nodes are kept for ever.
  int64_t node_retention_ms = 24 * 3600 * 1000;
};

class Coordinator final : public LiveRuns {
 public:
  // Restores the queue and the running attempts from `store`. The store,
  // clock and registry are borrowed and must outlive the coordinator.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      Store* store, Clock* clock, const Registry* registry,
      CoordinatorOptions options);
  ~Coordinator() override;

  // ------------------------------------------------------------- clients

  // Validates and stores a spec (R repetitions = R runs with seeds seed,
  // seed+1, ...) and queues its runs; a suite (common/suite.h) is one
  // submission per spec, all checked before any is stored (an error names
  // the spec by its number), then stored in one transaction: all or none.
  // InvalidArgument with the reason when the spec is refused;
  // FailedPrecondition naming the need and the capacity when the nodes
  // registered so far could never hold it (a coordinator that knows no node
  // yet queues it: nodes may still join). Nothing is stored then.
  // The runs record `user` as their submitter; ResourceExhausted when the
  // user would have more than `max_queued` runs queued (0: no cap);
  // PermissionDenied for a spec whose `sweep:` names another user's sweep.
  // A `request_id` (SubmitRequest.request_id; "" for none, InvalidArgument
  // when malformed) is stored with the runs: the same id from the same user
  // within a day answers with the first submit's runs, marked replayed and
  // unchecked, and AlreadyExists when its spec text differs
  // (server/coordinator/submit_requests.h).
  absl::StatusOr<v1::SubmitResponse> Submit(std::string_view spec_yaml,
                                            const std::string& user = "",
                                            int max_queued = 0,
                                            const std::string& request_id = "");

  // Cancels a run: a queued one at once; a placed one after telling its
  // agents to kill its workers. Returns the run's state (CANCELLED, or the
  // state a run already cancelled has). NotFound; FailedPrecondition when the
  // run already succeeded or failed.
  absl::StatusOr<v1::RunState> CancelRun(int64_t run_id);

  // Takes a succeeded run's result off the leaderboard, recording `by` and
  // `reason` (1 to 1024 bytes); returns the run. InvalidArgument for the
  // reason; NotFound; FailedPrecondition for a run that did not succeed or
  // is already invalidated.
  absl::StatusOr<v1::Run> InvalidateRun(int64_t run_id, const std::string& by,
                                        const std::string& reason);

  // Makes run `run_id` the promoted regress baseline of its series
  // (common/regress_band.h), recording `by`; returns the baseline. NotFound;
  // FailedPrecondition for a run that did not succeed with a score or whose
  // result was invalidated.
  absl::StatusOr<v1::Baseline> PromoteBaseline(int64_t run_id,
                                               const std::string& by);
  // The promoted baseline of `spec`'s series; NotFound when none.
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::RunSpec& spec);

  // Holds a queued run (`by` records who): it stays queued and is never
  // placed until released; ReleaseRun lets it compete again. Both return
  // the run. NotFound; FailedPrecondition for a run that is not queued, or
  // (release) not held.
  absl::StatusOr<v1::Run> HoldRun(int64_t run_id, const std::string& by);
  absl::StatusOr<v1::Run> ReleaseRun(int64_t run_id);

  // Drains a node (`reason`: 1 to 1024 bytes, required): it gets no new
  // run and finishes what it runs (state draining, then drained).
  // ResumeNode makes it schedulable again. Both return the node, and are
  // kept across restarts. NotFound for an unknown node.
  absl::StatusOr<v1::Node> DrainNode(const std::string& name,
                                     const std::string& reason);
  absl::StatusOr<v1::Node> ResumeNode(const std::string& name);

  // Starts (`duration_ms` > 0, from now), replaces or ends (0) the
  // maintenance window (server/coordinator/maintenance.h), recording
  // `reason` and `by`, and tells every connected agent; returns the window
  // (until_ms 0 once ended). Errors as Maintenance::Set.
  absl::StatusOr<v1::MaintenanceWindow> SetMaintenance(
      int64_t duration_ms, const std::string& reason, const std::string& by);

  // The queues with their nodes and runs now.
  v1::ListQueuesResponse ListQueues();

  // Where a watcher is in a run's update stream.
  using WatchCursor = RunWatchCursor;
  // Waits up to `timeout` for the run to change after `cursor` and returns
  // the update (the run now, the new log lines, final once it ended), or
  // nullopt on timeout. NotFound for an unknown run; Unavailable once
  // Shutdown() was called.
  absl::StatusOr<std::optional<v1::RunUpdate>> NextRunUpdate(
      int64_t run_id, WatchCursor* cursor, absl::Duration timeout);

  // LiveRuns: what the read side (server/coordinator/run_reads.h) asks of
  // the runs and nodes held in memory.
  std::optional<v1::Run> LiveRun(int64_t run_id) override;
  void ReplaceWithLive(
      google::protobuf::RepeatedPtrField<v1::Run>& runs) override;
  absl::StatusOr<v1::ListNodesResponse> ListNodes() override;
  std::string MetricsText() override;

  // -------------------------------------------------------------- agents

  // Registers an agent (the first message of its stream) and replies
  // Registered on `channel`. Returns the session id that the stream's later
  // calls pass. `channel` is borrowed until Disconnect(session) returns.
  // InvalidArgument for a bad name, slot count or address.
  absl::StatusOr<int64_t> Connect(const v1::Register& request,
                                  AgentChannel* channel);
  // Handles one later message of a session (heartbeat, events, port
  // reserved, worker exited, leaving). InvalidArgument for a Register or an
  // empty message; FailedPrecondition for an unknown or replaced session.
  absl::Status HandleAgentMessage(int64_t session,
                                  const v1::AgentMessage& message);
  // The stream of `session` ended. The node's slots stay held while its
  // attempts may still be running; after node_timeout_ms they fail.
  void Disconnect(int64_t session);

  // Time-driven work: requeues (or fails) the runs of nodes silent for
  // node_timeout_ms (counted from a maintenance window's end when that is
  // later: common/silence_deadline.h), stops attempts past their spec's
  // time_limit, scores runs whose exit grace ran out and forgets nodes down
  // past node_retention_ms. Call about once a second.
  void Tick();

  // Wakes every watcher with Unavailable; later watches fail at once.
  void Shutdown();

 private:
  using NodeState = NodeTable::Node;

  Coordinator(Store* store, Clock* clock, const Registry* registry,
              CoordinatorOptions options);
  absl::Status Restore();
  // Takes up a run that was placed when the coordinator stopped: holds its
  // nodes and replays its stored events.
  absl::Status RestorePlacedLocked(RunRecord& record, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One spec of a submission, checked against the registry, the queues and
  // the registered nodes, ready to store.
  struct PreparedSpec {
    std::string yaml;
    std::vector<v1::RunSpec> run_specs;  // one per repetition
    QueueChoice choice;
  };
  absl::StatusOr<PreparedSpec> PrepareSpecLocked(std::string yaml)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PermissionDenied when a spec of `prepared` names a sweep (RunSpec.sweep)
  // that holds a run of another user than `user`: a sweep id is its
  // submitter's, so nobody adds runs to another user's scaling study.
  absl::Status CheckSweepsAreOwnLocked(
      const std::vector<PreparedSpec>& prepared, const std::string& user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // DrainNode and ResumeNode: marks the node (NotFound when unknown),
  // stores it and schedules.
  absl::StatusOr<v1::Node> SetDraining(const std::string& name, bool draining,
                                       const std::string& reason);

  // Runs from the head of the queue onto free nodes.
  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartAttemptLocked(RunRecord& record,
                          const std::vector<std::string>& nodes,
                          bool backfilled) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendReserveLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the run in a final state, releasing its slots; cancels its workers
  // when `cancel_workers`.
  void EndRunLocked(RunRecord& record, v1::RunState state,
                    const std::string& error, bool cancel_workers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The current attempt was lost (`why`: a node lost or silent, a rank
  // killed by a signal): cancels its workers and requeues the run for a new
  // attempt while it has retries (spec max_retries), else fails it.
  void RetryOrFailLocked(RunRecord& record, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the current attempt's nodes to cancel its workers (a node not
  // connected gets the cancel when it registers again: ReconcileLocked).
  void CancelWorkersLocked(const RunRecord& record, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where a new attempt of `record` on `gang` resumes: the newest
  // checkpoint rank 0 of the last attempt reported (or the one that attempt
  // resumed from), when every node of `gang` shares checkpoints or the gang
  // is the one node that wrote it; {0, 0} (start fresh) otherwise.
  std::pair<int32_t, int32_t> ResumePointLocked(
      const RunRecord& record, const std::vector<std::string>& gang)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `gang` can read the checkpoints `writer_node` wrote: every node
  // of it shares checkpoints, or it is that one node.
  bool GangReachesLocked(const std::vector<std::string>& gang,
                         const std::string& writer_node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The earlier attempt whose checkpoint folder rank 0's agent of the
  // current attempt looks into for checkpoints newer than the resume point
  // (Assignment.probe_checkpoints_attempt): the previous attempt when the
  // gang reaches its checkpoints, else 0.
  int32_t ProbeAttemptLocked(const RunRecord& record) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Before the current attempt starts: resumes it from the newest of the
  // checkpoints its agent found (`port`) that passes VerifyFoundCheckpoint,
  // storing that checkpoint's event lines as the probed attempt's; each
  // one refused gets a line in the run's log saying why.
  void ResumeFromFoundLocked(RunRecord& record, const v1::PortReserved& port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The earlier attempts a resumed current attempt keeps epochs of, oldest
  // first, with their stored events; empty when it started fresh.
  absl::StatusOr<std::vector<AttemptEvents>> EarlierAttemptsLocked(
      const RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rank 0 of the current attempt reported where it resumed (`event`, a
  // hpcai500_resume): records it and carries the kept epochs.
  void NoteResumeLocked(RunRecord& record, const EventLine& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scores and ends the run once every rank exited 0 and sent run_stop (or
  // `force`, after the grace period), and every event the ranks wrote is
  // stored: no verdict on part of a run while the store is failing.
  void MaybeFinishLocked(RunRecord& record, bool force)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After new epochs of a running run: forecasts from its quality curve
  // whether it reaches its target (common/forecast.h) once an evaluation is
  // new, keeps the forecast with the run, and aborts the run (ABORTED, its
  // workers cancelled) when its spec asks for it and the forecast is
  // hopeless. coordinator_forecast.cc; docs/design.md "Forecast and early
  // abort".
  void ForecastLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether every exited rank's events, up to the last seq it wrote, are
  // stored without a gap; when they are and some were stored late
  // (events_unstored), reloads the tracker from the store in seq order.
  bool EventsStoredLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Saves the run's state and its current attempt; on failure marks it
  // unsaved for Tick to save again.
  void PersistLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendLocked(const std::string& node, const v1::CoordinatorMessage& m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The record of an active run whose current attempt is `key`, else null.
  RunRecord* CurrentAttemptLocked(const v1::AttemptKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Loads a run into runs_ (for watchers) when it is not there.
  absl::StatusOr<RunRecord*> RecordLocked(int64_t run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string MetricName(const v1::RunSpec& spec) const;
  // What the scheduler needs of a run (its queue, priority, gang, GPUs,
  // constraints, time limit, hold).
  static Scheduler::Request RequestFor(const v1::Run& run);
  // The node as ListNodes shows it: state (idle, busy, draining, drained,
  // down) with its reason, used slots, queues.
  v1::Node NodeViewLocked(const NodeState& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the node with its state.
  void SaveNodeLocked(const NodeState& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the scheduler what a registered node offers.
  void OfferNodeLocked(const v1::Node& info) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Marks the node schedulable again and answers with a heartbeat, so its
  // agent knows the coordinator hears it.
  void HandleHeartbeatLocked(NodeState& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes a batch in (EventIntake) and gives each run its new lines.
  void HandleEventsLocked(NodeState& node, const v1::Events& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes what a (re-)registered agent runs agree with what the coordinator
  // expects of it: cancels attempts it should not run (fencing), asks again
  // for a port not yet reported, requeues (or fails) attempts with a rank
  // the agent no longer has and whose exit is not stored.
  void ReconcileLocked(const v1::Register& request, AgentChannel* channel)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Requeues (or fails) the placed runs with a gang on `name`, silent for
  // `silent_ms`.
  void LoseRunsOnSilentNodeLocked(const std::string& name, int64_t silent_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes from the node table, the scheduler and the store each node that
  // is disconnected, holds no slots, is not drained (unless it left) and
  // was last heard from node_retention_ms or more before `now`; logs each.
  void ForgetGoneNodesLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails placed runs whose current attempt ran past the spec's time_limit.
  void EnforceTimeLimitsLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Copies each queued run's waiting reason from the scheduler.
  void NoteWaitingReasonsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acknowledges `exit` (stored, or fenced and dropped) to `node`.
  void AckExitLocked(NodeState& node, const v1::WorkerExited& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandlePortReservedLocked(NodeState& node, const v1::PortReserved& port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // For a launcher run (spec.launcher mpirun or srun): every node of the
  // attempt, with its address, ranks, workdir, checkpoint root and iface, into
  // rank 0's PHASE_START `assignment`. Nothing for launcher agent.
  void AddLaunchNodesLocked(const RunRecord& record,
                            v1::Assignment& assignment) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleWorkerExitedLocked(NodeState& node, const v1::WorkerExited& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The node's agent leaves for good: the node takes nothing new (until it
  // registers again) and each run placed on it loses its attempt now
  // (RetryOrFailLocked), not after the node timeout.
  void HandleLeavingLocked(NodeState& node, const v1::Leaving& leaving)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Store* const store_;
  Clock* const clock_;
  const Registry* const registry_;
  const CoordinatorOptions options_;

  absl::Mutex mu_;
  Scheduler scheduler_ ABSL_GUARDED_BY(mu_);
  // Active runs, and ended ones that were active or watched since this
  // process started.
  std::map<int64_t, RunRecord> runs_ ABSL_GUARDED_BY(mu_);
  NodeTable nodes_ ABSL_GUARDED_BY(mu_);
  EventIntake intake_ ABSL_GUARDED_BY(mu_);
  Maintenance maintenance_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;

  // Thread-safe themselves (/metrics).
  Histogram scheduler_pass_{{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                             0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_
