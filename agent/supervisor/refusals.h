// Refusals: the ranks this node refused to start (a bad assignment, a
// folder or process that could not be made), each answered with a
// WorkerExited that carries the error. Each is kept until the coordinator
// acknowledges it, listed as exited in Register and sent again after a
// reconnect, so a refusal survives a broken stream.
//
// Not thread-safe: the Supervisor's thread drives it.
#ifndef HPCAI500_AGENT_SUPERVISOR_REFUSALS_H_
#define HPCAI500_AGENT_SUPERVISOR_REFUSALS_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The message that carries `exited`.
v1::AgentMessage ExitedMessage(const v1::WorkerExited& exited);

class Refusals {
 public:
  // The WorkerExited (exit code -1) that refuses rank `rank` of attempt
  // `key` with `error`, kept until acknowledged.
  v1::AgentMessage Refuse(const v1::AttemptKey& key, int rank,
                          absl::string_view error);

  // Refuses every rank of `a` with `error` (rank 0 when it names none).
  std::vector<v1::AgentMessage> RefuseAll(const v1::Assignment& a,
                                          absl::string_view error);

  // Forgets the refusal `ack` acknowledges, if any.
  void Acknowledge(const v1::ExitAck& ack);

  // Appends the message of every refusal kept.
  void AppendTo(std::vector<v1::AgentMessage>& messages) const;

  // Adds every refused rank to `running` as exited (its attempt's entry,
  // added when missing).
  void AddExitedRanks(std::vector<v1::RunningAttempt>& running) const;

 private:
  // (run, attempt, rank) -> its refusal.
  std::map<std::tuple<int64_t, int32_t, int32_t>, v1::WorkerExited> refused_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_REFUSALS_H_
