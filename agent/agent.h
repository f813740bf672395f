// Agent: the per-node process around a Supervisor. It holds one
// AgentService.Connect stream to the coordinator for its whole life:
// Register (inventory and what still runs), then the unacknowledged events
// and pending exits, then heartbeats, events and exits as they happen. When
// the stream breaks it reconnects with capped backoff; workers keep running
// meanwhile, unless the coordinator stays silent for longer than its node
// timeout (Registered.node_timeout_ms, 60 s before the first Registered):
// then the coordinator has given this node up, and the agent stops its
// workers itself (self-fencing) rather than let them run on beside their
// replacements. Keepalive pings on the channel notice a dead coordinator.
// During the coordinator's maintenance window (Registered and
// CoordinatorMessage.maintenance) that silence counts from the window's end
// when it is later (common/silence_deadline.h), so a planned outage of
// hpcai500d stops nothing. The workers' leases
// (agent/attempts/worker_leases.h), renewed at every heartbeat up to that same
// deadline, stop them when the agent itself is gone.
//
// A pilot agent (--leave-on-stop) leaves instead: when stopped it sends
// Leaving, stops its workers and delivers their last events and exits
// before it returns, so a run on it gets its new attempt at once and nothing
// it wrote is lost.
//
// Thread-safe: Run() is called once; Stop() may be called from any thread
// (not from a signal handler; use the stop flag of Run for that).
#ifndef HPCAI500_AGENT_AGENT_H_
#define HPCAI500_AGENT_AGENT_H_

#include <grpcpp/channel.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "agent/attempts/worker_leases.h"
#include "agent/node/preflight_runner.h"
#include "agent/options.h"
#include "agent/supervisor/supervisor.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

class Agent {
 public:
  // processes and clock are borrowed and must outlive the Agent.
  Agent(AgentOptions options, ProcessLauncher* processes, Clock* clock);

  // Creates the workdir, takes up workers of an earlier agent, then serves
  // the coordinator until *stop becomes non-zero (the number of the signal
  // that stopped it). Workers are left running on return (they survive an
  // agent restart by design), unless the agent leaves (--leave-on-stop):
  // then it returns once its workers ended and what they wrote was
  // acknowledged, or after --kill-grace-seconds + 5 s. Returns an error only
  // when the workdir cannot be created.
  absl::Status Run(const std::atomic<int>* stop);

 private:
  // One connection: returns when the stream breaks or *stop is set. Returns
  // true when the coordinator answered Register (backoff restarts); *why
  // says how the stream ended.
  bool RunSession(const std::atomic<int>* stop, std::string* why);
  // One session's state beside its stream (defined in agent.cc).
  struct Session;
  // Whether the session ends: stopped, and for a pilot agent (that got
  // Registered), once it said it leaves (sending Leaving the first time),
  // its workers ended and everything they wrote was acknowledged, or the
  // leave deadline passed.
  bool SessionOver(const std::atomic<int>* stop, Session& session);
  // Acts on one message from the coordinator; replies go out on `session`.
  void HandleMessage(const v1::CoordinatorMessage& message, Session& session);
  // Registered: the heartbeat interval, node timeout and maintenance window
  // this node keeps.
  void HandleRegistered(const v1::Registered& registered, Session& session);
  // Between batches of messages: polls the workers and sends what they
  // wrote, what is overdue, the leases' renewal and the heartbeat when due.
  void Tick(Session& session);
  // Waits until `channel` connects, in short steps that keep reaping workers
  // and checking the fence (an unreachable address can take many seconds to
  // fail). False, with *why, when *stop is set or no connection came soon.
  bool AwaitConnection(grpc::Channel& channel, const std::atomic<int>* stop,
                       std::string* why);
  // The first message of a session: this node, its inventory and the
  // attempts its workers still run.
  v1::AgentMessage RegisterMessage();
  // Until when the coordinator keeps this node without a word from it: the
  // last word, or the maintenance window's end when later, plus its node
  // timeout (SilenceDeadlineMs). The self-fence and the leases both end
  // there.
  int64_t FenceDeadlineMs() const;
  // Stops every worker (Supervisor::FenceAll) once FenceDeadlineMs() has
  // passed; logs once per fencing.
  void FenceIfSilent();
  // A pilot agent stopped by `signal` starts to leave (once): stops every
  // worker and sets the deadline. Returns the reason the coordinator is told.
  std::string BeginLeaving(int signal);
  // After the last session of a leaving agent: waits (until the deadline)
  // for workers it could not see end while connected, and logs what was
  // left undelivered.
  void FinishLeaving(int signal);

  // Constant after construction.
  const AgentOptions options_;
  Clock* const clock_;

  // Only touched by the Run thread.
  WorkerLeases leases_;  // before supervisor_, which borrows it
  Supervisor supervisor_;
  PreflightRunner preflight_;         // the coordinator's pre-flight orders
  int64_t last_heard_ms_ = 0;         // the last message from the coordinator
  int64_t fence_timeout_ms_;          // the last Registered.node_timeout_ms
  int64_t maintenance_until_ms_ = 0;  // the window's end; 0: none
  int64_t leave_by_ms_ = 0;  // leaving: when to give up; 0: not leaving
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_AGENT_H_
