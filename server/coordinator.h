// The coordinator's logic, without a network: submissions, the queue and the
// gang scheduler, the two-phase rendezvous, event ingestion and
// acknowledgement, scoring, cancels, the node registry, run watchers and the
// leaderboard. The gRPC services and the HTTP front end only convert and call
// into it; tests drive it directly with fake agent channels and a fake clock.
//
// Thread-safe: every public method may be called from any thread. Messages to
// agents are handed to their AgentChannel with mu_ held, so Send() must only
// queue, never block or call back.
#ifndef HPCAI500_SERVER_COORDINATOR_H_
#define HPCAI500_SERVER_COORDINATOR_H_

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
#include "common/events.h"
#include "common/registry.h"
#include "proto/hpcai500.pb.h"
#include "server/http/coordinator_view.h"
#include "server/scheduler.h"
#include "server/store.h"

namespace hpcai500 {

// The outbound half of one agent's stream. The coordinator calls Send() with
// its mutex held: an implementation queues the message and returns.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  virtual void Send(const v1::CoordinatorMessage& message) = 0;
};

struct CoordinatorOptions {
  // A node silent this long (disconnected or no heartbeat) fails its attempts.
  int64_t node_timeout_ms = 60'000;
  // Told to agents in Registered.
  int32_t heartbeat_interval_ms = 5'000;
  // After every rank exited 0, how long to wait for the last events (each
  // rank's run_stop) before scoring with what arrived.
  int64_t exit_grace_ms = 10'000;
};

class Coordinator final : public CoordinatorView {
 public:
  // Restores the queue and the running attempts from `store`. The store,
  // clock and registry are borrowed and must outlive the coordinator.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      Store* store, Clock* clock, const Registry* registry,
      CoordinatorOptions options);
  ~Coordinator() override;

  // ------------------------------------------------------------- clients

  // Validates and stores a spec (R repetitions = R runs with seeds seed,
  // seed+1, ...) and queues its runs. InvalidArgument with the reason when the
  // spec is refused; nothing is stored then.
  absl::StatusOr<v1::SubmitResponse> Submit(std::string_view spec_yaml);

  // Cancels a run: a queued one at once; a placed one after telling its
  // agents to kill its workers. Returns the run's state (CANCELLED, or the
  // state a run already cancelled has). NotFound; FailedPrecondition when the
  // run already succeeded or failed.
  absl::StatusOr<v1::RunState> CancelRun(int64_t run_id);

  // Where a watcher is in a run's update stream.
  struct WatchCursor {
    int64_t version = -1;
    size_t log_sent = 0;
  };
  // Waits up to `timeout` for the run to change after `cursor` and returns
  // the update (the run now, the new log lines, final once it ended), or
  // nullopt on timeout. NotFound for an unknown run; Unavailable once
  // Shutdown() was called.
  absl::StatusOr<std::optional<v1::RunUpdate>> NextRunUpdate(
      int64_t run_id, WatchCursor* cursor, absl::Duration timeout);

  // CoordinatorView.
  absl::StatusOr<v1::Run> GetRun(int64_t run_id) override;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(
      const v1::ListRunsRequest& request) override;
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request) override;
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
  // reserved, worker exited). InvalidArgument for a Register or an empty
  // message; FailedPrecondition for an unknown or replaced session.
  absl::Status HandleAgentMessage(int64_t session,
                                  const v1::AgentMessage& message);
  // The stream of `session` ended. The node's slots stay held while its
  // attempts may still be running; after node_timeout_ms they fail.
  void Disconnect(int64_t session);

  // Time-driven work: fails attempts of nodes silent for node_timeout_ms and
  // scores runs whose exit grace ran out. Call about once a second.
  void Tick();

  // Wakes every watcher with Unavailable; later watches fail at once.
  void Shutdown();

 private:
  struct NodeState {
    v1::Node info;
    int64_t session = 0;              // 0: disconnected
    AgentChannel* channel = nullptr;  // borrowed; null when disconnected
  };
  // A run the coordinator holds in memory: active ones, and finished ones
  // that were active or watched since this process started.
  struct RunRecord {
    v1::Run run;                     // authoritative while in memory
    std::vector<std::string> nodes;  // current attempt's gang, node-major
    bool start_sent = false;         // PHASE_START went out
    std::map<int32_t, v1::WorkerExited> exits;  // by rank
    int64_t all_exited_ms = 0;
    std::vector<EventLine> events;                 // current attempt, parsed
    std::map<int, std::set<int32_t>> stats_ranks;  // epoch -> ranks
    std::set<int> accuracy_epochs;                 // rank 0 evaluated
    std::set<int32_t> stopped_ranks;               // ranks with run_stop
    std::set<int> logged_epochs;
    std::vector<std::string> log;
    int64_t version = 0;
  };

  Coordinator(Store* store, Clock* clock, const Registry* registry,
              CoordinatorOptions options);
  absl::Status Restore();

  // Runs from the head of the queue onto free nodes.
  void ScheduleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartAttemptLocked(RunRecord& record,
                          const std::vector<std::string>& nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendReserveLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the run in a final state, releasing its slots; cancels its workers
  // when `cancel_workers`.
  void EndRunLocked(RunRecord& record, v1::RunState state,
                    const std::string& error, bool cancel_workers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scores and ends the run once every rank exited 0 and sent run_stop (or
  // `force`, after the grace period).
  void MaybeFinishLocked(RunRecord& record, bool force)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PersistLocked(RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ChangedLocked(RunRecord& record, std::string log_line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddEventLocked(RunRecord& record, EventLine event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LogEpochsLocked(RunRecord& record, bool flush)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendLocked(const std::string& node, const v1::CoordinatorMessage& m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The record of an active run whose current attempt is `key`, else null.
  RunRecord* CurrentAttemptLocked(const v1::AttemptKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Loads a run into runs_ (for watchers) when it is not there.
  absl::StatusOr<RunRecord*> RecordLocked(int64_t run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string MetricName(const v1::RunSpec& spec) const;

  void HandleHeartbeatLocked(NodeState& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleEventsLocked(NodeState& node, const v1::Events& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandlePortReservedLocked(NodeState& node, const v1::PortReserved& port)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleWorkerExitedLocked(NodeState& node, const v1::WorkerExited& exit)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Store* const store_;
  Clock* const clock_;
  const Registry* const registry_;
  const CoordinatorOptions options_;

  absl::Mutex mu_;
  Scheduler scheduler_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, RunRecord> runs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, NodeState> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> sessions_ ABSL_GUARDED_BY(mu_);  // -> node
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t events_ingested_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_H_
