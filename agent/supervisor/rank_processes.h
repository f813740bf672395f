// The per-rank path of an attempt (spec.launcher agent, the default): this
// agent starts each of its ranks as its own process, leading its own group,
// and reaps it as its child (or, taken up again after an agent restart,
// watches it by its pid file). The launcher path is
// agent/supervisor/launcher_runs.h.
//
// Thread-safe: free functions; the Supervisor's thread drives them.
#ifndef HPCAI500_AGENT_SUPERVISOR_RANK_PROCESSES_H_
#define HPCAI500_AGENT_SUPERVISOR_RANK_PROCESSES_H_

#include "absl/status/status.h"
#include "agent/attempts/attempt_plan.h"
#include "agent/supervisor/supervised_attempt.h"
#include "agent/system/process.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// Starts the ranks of `plan` (for `a`) in order into attempt.ranks, each
// with its pid file written and a log line; `plan`'s launches are moved
// from. Stops at the first rank that cannot start and returns why: that
// rank and those after it are not in attempt.ranks.
absl::Status StartRankProcesses(const v1::Assignment& a, AttemptPlan& plan,
                                ProcessLauncher& processes,
                                SupervisedAttempt& attempt);

// Notes whether a running rank ended: the agent's child is reaped (and what
// it left in its group killed), a reattached one is looked for by its pid
// and start time.
void CheckRankProcess(SupervisedRank& rank, ProcessLauncher& processes);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_RANK_PROCESSES_H_
