// The coordinator: it keeps the agents' sessions, places queued runs on
// nodes and drives each attempt's two-phase rendezvous, its events and its
// end. It holds the state its parts share (coordinator_state.h) under one
// mutex and hands the work to them: Attempts (placing runs, ends, requeue,
// resume, time limits), RunScoring (forecasts and verdicts) and
// AgentSessions (what agents say); submission.h checks what clients submit.
// The gRPC services and the HTTP front end only convert and call into it;
// tests drive it directly with fake agent channels and a fake clock.
//
// Thread-safe: every public method may be called from any thread. Messages to
// agents are handed to their AgentChannel with the mutex held, so Send()
// must only queue, never block or call back.
#ifndef HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_
#define HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/agent_sessions.h"
#include "server/coordinator/attempts.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/node_health.h"
#include "server/coordinator/node_table.h"
#include "server/coordinator/run_reads.h"
#include "server/coordinator/run_record.h"
#include "server/coordinator/run_scoring.h"
#include "server/store/store.h"

namespace hpcai500 {

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
  // seed+1, ...) and queues its runs; a suite (methodology/suite.h) is one
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
  // (methodology/regress_band.h), recording `by`; returns the baseline.
  // NotFound; FailedPrecondition for a run that did not succeed with a score or
  // whose result was invalidated.
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

  // Node health (server/coordinator/node_health.h). Preflight measures the
  // named nodes (`queue`: every node of that queue; neither: every
  // connected node) and waits for their results, judged and stored; errors
  // as NodeHealth::RunLocked, NotFound for an unknown queue. NodeHealth
  // gives a node's pre-flights and incidents, newest first (at most
  // `limit`); NotFound for an unknown node. ResumeNode also clears a flag.
  absl::StatusOr<v1::PreflightResponse> Preflight(
      const v1::PreflightRequest& request);
  absl::StatusOr<v1::NodeHealthResponse> NodeHealthOf(const std::string& name,
                                                      int limit);

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
  // The change points of the run series (server/coordinator/series_changes.h).
  absl::StatusOr<v1::ListChangesResponse> ListChanges(
      const v1::ListChangesRequest& request) override;

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
  Coordinator(Store* store, Clock* clock, const Registry* registry,
              CoordinatorOptions options);
  absl::Status Restore();
  // Takes up a run that was placed when the coordinator stopped: holds its
  // nodes and replays its stored events.
  absl::Status RestorePlacedLocked(RunRecord& record, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // DrainNode and ResumeNode: marks the node (NotFound when unknown),
  // stores it and schedules.
  absl::StatusOr<v1::Node> SetDraining(const std::string& name, bool draining,
                                       const std::string& reason);

  CoordinatorState state_;
  // The parts, each borrowing those above it.
  NodeHealth node_health_{&state_};
  Attempts attempts_{&state_, &node_health_};
  RunScoring scoring_{&state_, &attempts_};
  AgentSessions sessions_{&state_, &attempts_, &scoring_};
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_COORDINATOR_H_
