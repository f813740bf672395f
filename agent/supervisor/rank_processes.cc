// Each rank its own process: started, pid files written, reaped.
#include "agent/supervisor/rank_processes.h"

#include <signal.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/where.h"
#include "common/log.h"

namespace hpcai500::agent {

absl::Status StartRankProcesses(const v1::Assignment& a, AttemptPlan& plan,
                                ProcessLauncher& processes,
                                SupervisedAttempt& attempt) {
  for (RankPlan& rank_plan : plan.ranks) {
    absl::StatusOr<pid_t> pid = processes.Launch(rank_plan.launch);
    if (!pid.ok()) {
      LogError(absl::StrCat(Where(a.key(), rank_plan.rank),
                            ": cannot start worker: ", pid.status().message()));
      return pid.status();
    }
    SupervisedRank rank = NewRank(a.key(), std::move(rank_plan));
    rank.process.pid = *pid;
    rank.process.start_time = processes.StartTime(*pid).value_or(0);
    rank.is_child = true;
    rank.running = true;
    RecordPid(a.key(), rank);
    LogInfo(absl::StrCat(
        Where(a.key(), rank.paths.rank), ": started worker pid ", *pid,
        " local_rank=", rank.paths.local_rank, " world_size=", a.world_size()));
    attempt.ranks.push_back(std::move(rank));
  }
  return absl::OkStatus();
}

void CheckRankProcess(SupervisedRank& rank, ProcessLauncher& processes) {
  if (!rank.running) return;
  if (rank.is_child) {
    std::optional<ExitStatus> status = processes.TryWait(rank.process.pid);
    if (!status) return;
    rank.exit = ExitRecord{*status, ""};
    // Whatever the worker left in its group goes with it.
    processes.SignalGroup(rank.process.pid, SIGKILL);
  } else if (IsSameProcessRunning(rank.process, processes)) {
    return;
  }
  rank.running = false;
}

}  // namespace hpcai500::agent
