// WorkerLeases: the agent's side of its workers' leases
// (common/worker_lease.h). Every attempt folder holds a lease file with the
// wall-clock time until which its workers may train; the agent writes it
// before the attempt's workers start and renews it every second, with
// the time until which the coordinator keeps this node: its last word plus
// the node timeout. An agent that is gone (SIGKILL, a crash) or cut off
// renews nothing, and its workers stop themselves by the time the
// coordinator gives their attempt to another node; a restarted agent that
// registers in time renews the leases of the workers it took up.
//
// Not thread-safe: one thread (the Agent's loop) drives it.
#ifndef HPCAI500_AGENT_ATTEMPTS_WORKER_LEASES_H_
#define HPCAI500_AGENT_ATTEMPTS_WORKER_LEASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

class WorkerLeases {
 public:
  // `workdir` is the agent's absolute working directory.
  explicit WorkerLeases(std::string workdir);

  // The deadline (Unix milliseconds) later grants and renewals write.
  void set_deadline_ms(int64_t deadline_ms) { deadline_ms_ = deadline_ms; }
  int64_t deadline_ms() const { return deadline_ms_; }

  // Writes the lease of attempt `key`, whose folder `attempt_dir` exists,
  // before its workers start. A failed write is logged: those workers then
  // run without a lease.
  void Grant(const v1::AttemptKey& key, const std::string& attempt_dir) const;

  // Rewrites the lease of every attempt of `running` (Supervisor::Running)
  // that has a running rank. Returns how many leases were written; a failed
  // write is logged.
  int Renew(const std::vector<v1::RunningAttempt>& running) const;

 private:
  // Constant after construction.
  const std::string workdir_;

  int64_t deadline_ms_ = 0;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_WORKER_LEASES_H_
