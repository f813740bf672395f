// A supervised attempt's ranks: made, signalled, reported and marked done
// the same way whichever path started them.
#include "agent/supervisor/supervised_attempt.h"

#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_checkpoints.h"
#include "agent/attempts/where.h"
#include "agent/system/files.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "common/run_state.h"

namespace hpcai500::agent {
namespace {

bool Succeeded(const ExitRecord& exit) {
  return exit.status.exit_code == 0 && exit.status.signal == 0;
}

// The reason the site's scheduler gave for stopping a launch (a scancelled
// Slurm step), or "" when it did not stop it or there is none.
std::string SchedulerCancelled(const std::optional<LaunchProcess>& launch) {
  return launch && launch->end() ? launch->end()->cancelled : "";
}

// The exit of a rank that is not the agent's child, from its events: their
// final state, else the scheduler's cancel, the agent's stop, or lost.
ExitRecord ExitFromEvents(const SupervisedAttempt& attempt,
                          const SupervisedRank& rank,
                          const std::string& cancelled) {
  const std::optional<std::string>& stop = rank.tailer->run_stop_status();
  if (stop) {
    return ExitRecord{{*stop == event_keys::kStatusSuccess ? 0 : 1, 0}, ""};
  }
  if (!cancelled.empty()) return ExitRecord{{-1, 0}, cancelled};
  if (attempt.cancelling) {
    return ExitRecord{
        {-1, 0}, "stopped by the agent; exit status unknown (not its child)"};
  }
  return ExitRecord{{-1, 0}, kWorkerLostError};
}

}  // namespace

SupervisedAttempt NewAttempt(const v1::AttemptKey& key, const AttemptPlan& plan,
                             Launcher launcher) {
  SupervisedAttempt attempt;
  attempt.key = key;
  attempt.dir = plan.dir;
  attempt.checkpoint_dir = plan.checkpoint_dir;
  attempt.launcher = launcher;
  return attempt;
}

SupervisedRank NewRank(const v1::AttemptKey& key, RankPlan paths) {
  SupervisedRank rank;
  rank.tailer = std::make_unique<EventTailer>(
      paths.events_path, paths.acked_path, key, paths.rank);
  rank.paths = std::move(paths);
  return rank;
}

void RecordPid(const v1::AttemptKey& key, const SupervisedRank& rank) {
  if (absl::Status written = WritePidFile(rank.paths.pid_path, rank.process);
      !written.ok()) {
    LogWarning(absl::StrCat(Where(key, rank.paths.rank), ": ",
                            written.message(),
                            " (no reattach after an agent restart)"));
  }
}

void SignalRank(const SupervisedRank& rank, int sig,
                ProcessLauncher& processes) {
  if (rank.process.pid <= 0) return;  // a followed rank not found yet
  processes.SignalGroup(rank.process.pid, sig);
  // Started by a launcher (or reattached to), it need not lead a group.
  if (!rank.is_child) processes.SignalProcess(rank.process.pid, sig);
}

v1::WorkerExited ReportExit(SupervisedAttempt& attempt, SupervisedRank& rank) {
  const std::string cancelled = SchedulerCancelled(attempt.launch);
  if (!rank.exit) rank.exit = ExitFromEvents(attempt, rank, cancelled);
  v1::WorkerExited report;
  *report.mutable_key() = attempt.key;
  report.set_rank(rank.paths.rank);
  report.set_exit_code(rank.exit->status.exit_code);
  report.set_signal(rank.exit->status.signal);
  report.set_error(rank.exit->error);
  report.set_last_seq(rank.tailer->last_seq());
  if (!cancelled.empty() && rank.exit->error == cancelled) {
    report.set_cancelled(rank.exit->error);
  }
  // A launcher collects its ranks' output: its stderr on rank 0's node.
  const std::string stderr_path = !rank.followed ? rank.paths.launch.stderr_path
                                  : attempt.launch
                                      ? attempt.launch->stderr_path()
                                      : "";
  report.set_stderr_tail(ReadFileTail(stderr_path, kStderrTailBytes));
  return report;
}

std::string DescribeExit(const ExitRecord& exit) {
  std::string text = exit.status.signal != 0
                         ? absl::StrCat("killed by signal ", exit.status.signal)
                         : absl::StrCat("exit code ", exit.status.exit_code);
  if (!exit.error.empty()) absl::StrAppend(&text, " (", exit.error, ")");
  return text;
}

void MarkDoneWhenDelivered(const SupervisedAttempt& attempt,
                           SupervisedRank& rank) {
  if (rank.done || !rank.report || !rank.exit_acked ||
      !rank.tailer->all_acked()) {
    return;
  }
  // Before the done file: an agent that dies in between removes them again
  // after the exit is reported and acknowledged once more.
  if (rank.paths.rank == 0 && Succeeded(*rank.exit)) {
    RemoveRunCheckpoints(attempt.key, attempt.checkpoint_dir);
  }
  rank.done = true;
  if (absl::Status written = WriteFileAtomically(rank.paths.done_path, "");
      !written.ok()) {
    LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": ",
                            written.message()));
  }
}

}  // namespace hpcai500::agent
