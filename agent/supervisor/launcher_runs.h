// LauncherRuns: the launcher path of an attempt (spec.launcher mpirun or
// srun, agent/launch/launcher.h). Rank 0's node starts the one launcher
// over every node and watches it (agent/launch/launch_process.h); every
// node follows its own ranks, found among its processes by their
// --events-file argument once the launcher started them, and records which
// ranks it follows (kFollowedRanksFile) so that a restarted agent follows
// them again. The per-rank path is agent/supervisor/rank_processes.h.
//
// Not thread-safe: the Supervisor's thread drives it.
#ifndef HPCAI500_AGENT_SUPERVISOR_LAUNCHER_RUNS_H_
#define HPCAI500_AGENT_SUPERVISOR_LAUNCHER_RUNS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "agent/attempts/attempt_plan.h"
#include "agent/launch/assignment.h"
#include "agent/launch/launcher.h"
#include "agent/supervisor/supervised_attempt.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "common/vocabulary.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// A rank of a launcher run that ended without a final state (no run_stop
// event) is reported only once its launch's outcome can be known: on rank
// 0's node this long after mpirun or srun ended (an agent stopping with its
// Slurm allocation is gone by then and reports nothing); on the other nodes
// this long after the rank ended, so that rank 0's node reports a cancelled
// step first.
inline constexpr int64_t kLauncherSettleMs = 2000;
inline constexpr int64_t kFollowerSettleMs = 5000;

class LauncherRuns {
 public:
  // All borrowed; they must outlive this.
  LauncherRuns(const NodeContext* node, const LauncherSettings* settings,
               ProcessLauncher* processes, Clock* clock);

  // Starts `a` (checked by PlanAttempt, its folders made) as a run of
  // `launcher` (kMpirun or kSrun): on rank 0's node plans and writes the
  // launch, calls `before_launch` (which frees the port rank 0's worker
  // binds) and starts it; on every node follows the ranks of `plan`, and
  // records them (a file not written is logged: they are not followed
  // again after an agent restart). The error, after the launcher's name,
  // refuses every rank of `a`.
  absl::StatusOr<SupervisedAttempt> Start(
      const v1::Assignment& a, Launcher launcher, const AttemptPlan& plan,
      absl::FunctionRef<void()> before_launch);

  // After an agent restart: the launcher and the ranks this node followed
  // in `attempt`'s folder, and on rank 0's node its launcher taken up again
  // (LaunchProcess::Reattach). nullopt for an attempt the agent started
  // itself (a file that cannot be read is logged).
  std::optional<FollowedRanks> Reattach(SupervisedAttempt& attempt);

  // The processes of the followed ranks of `attempts` not found yet, by
  // events path: one look at every process for all of them (none when no
  // rank is looked for).
  std::map<std::string, pid_t> FindUnfoundRanks(
      const std::map<AttemptId, SupervisedAttempt>& attempts);

  // Reaps or polls `attempt`'s launcher (on rank 0's node), with SIGKILL
  // once a cancel's grace period ran out.
  void CheckLaunch(SupervisedAttempt& attempt);

  // Finds a followed running rank's process (among `found`, as
  // FindUnfoundRanks gave) and records it, or notes that the rank ended:
  // it wrote its final state, its launcher ended before it started, or it
  // was cancelled and never showed up within the grace period.
  void CheckFollowed(SupervisedAttempt& attempt, SupervisedRank& rank,
                     const std::map<std::string, pid_t>& found);

  // Whether a followed rank that ended can be reported now: at once with
  // an exit, a final state or a cancel, else after kLauncherSettleMs or
  // kFollowerSettleMs.
  bool ReadyToReport(const SupervisedAttempt& attempt,
                     const SupervisedRank& rank) const;

 private:
  // Plans, writes and starts the launcher into attempt.launch (rank 0's
  // node); the error refuses the start.
  absl::Status Launch(const v1::Assignment& a, const AttemptPlan& plan,
                      absl::FunctionRef<void()> before_launch,
                      SupervisedAttempt& attempt);
  // Writes kFollowedRanksFile: what a restarted agent follows again.
  void RecordFollowedRanks(const v1::Assignment& a, Launcher launcher,
                           const std::string& dir);
  // Why a followed rank never started: its launcher ended (and what it
  // said on stderr).
  std::string WhyNotStarted(const SupervisedAttempt& attempt,
                            const SupervisedRank& rank) const;

  // Constant after construction.
  const NodeContext* const node_;
  const LauncherSettings* const settings_;
  ProcessLauncher* const processes_;
  Clock* const clock_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_LAUNCHER_RUNS_H_
