// Agent: the per-node process around a Supervisor. It holds one
// AgentService.Connect stream to the coordinator for its whole life:
// Register (inventory and what still runs), then the unacknowledged events
// and pending exits, then heartbeats, events and exits as they happen. When
// the stream breaks it reconnects with capped backoff; workers keep running
// meanwhile.
//
// Thread-safe: Run() is called once; Stop() may be called from any thread
// (not from a signal handler; use the stop flag of Run for that).
#ifndef HPCAI500_AGENT_AGENT_H_
#define HPCAI500_AGENT_AGENT_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "agent/options.h"
#include "agent/process.h"
#include "agent/supervisor.h"
#include "common/clock.h"

namespace hpcai500::agent {

class Agent {
 public:
  // processes and clock are borrowed and must outlive the Agent.
  Agent(AgentOptions options, ProcessLauncher* processes, Clock* clock);

  // Creates the workdir, takes up workers of an earlier agent, then serves
  // the coordinator until *stop becomes true. Workers are left running on
  // return (they survive an agent restart by design). Returns an error only
  // when the workdir cannot be created.
  absl::Status Run(const std::atomic<bool>* stop);

 private:
  // One connection: returns when the stream breaks or *stop is set. Returns
  // true when the coordinator answered Register (backoff restarts); *why
  // says how the stream ended.
  bool RunSession(const std::atomic<bool>* stop, std::string* why);
  // The first message of a session: this node, its inventory and the
  // attempts its workers still run.
  v1::AgentMessage RegisterMessage();

  // Constant after construction.
  const AgentOptions options_;
  Clock* const clock_;

  // Only touched by the Run thread.
  Supervisor supervisor_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_AGENT_H_
