// A launcher run's mpirun or srun: started or taken up again, reaped or
// polled, signalled, and how it ended recorded beside its ranks.
#include "agent/launch/launch_process.h"

#include <signal.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/where.h"
#include "agent/system/files.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace hpcai500::agent {

LaunchProcess::LaunchProcess(Launcher launcher, v1::AttemptKey key,
                             std::string attempt_dir,
                             ProcessLauncher* processes, Clock* clock)
    : launcher_(launcher),
      key_(std::move(key)),
      dir_(std::move(attempt_dir)),
      processes_(processes),
      clock_(clock) {}

std::string LaunchProcess::Path(const char* file) const {
  return absl::StrCat(dir_, "/", file);
}

absl::Status LaunchProcess::WriteFiles(const LauncherPlan& plan) {
  for (const auto& [path, text] :
       {std::pair(plan.config_path, plan.config_text),
        std::pair(plan.hostfile_path, plan.hostfile_text)}) {
    if (path.empty()) continue;
    RETURN_IF_ERROR(WriteFileAtomically(path, text));
  }
  return absl::OkStatus();
}

absl::Status LaunchProcess::Start(const LauncherPlan& plan, int world_size,
                                  int nodes) {
  absl::StatusOr<pid_t> pid = processes_->Launch(plan.launch);
  if (!pid.ok()) return pid.status();
  running_ = true;
  is_child_ = true;
  process_.pid = *pid;
  process_.start_time = processes_->StartTime(*pid).value_or(0);
  stderr_path_ = plan.launch.stderr_path;
  const std::string name(Name(launcher_));
  if (absl::Status written = WritePidFile(Path(kLauncherPidFile), process_);
      !written.ok()) {
    LogWarning(absl::StrCat(Where(key_), ": ", written.message(),
                            " (no reattach to ", name,
                            " after an agent restart)"));
  }
  LogInfo(absl::StrCat(Where(key_), ": started ", name, " pid ", *pid, " for ",
                       world_size, " ranks on ", nodes, " nodes (",
                       plan.config_path, ")"));
  return absl::OkStatus();
}

bool LaunchProcess::Reattach() {
  absl::StatusOr<PidRecord> pid = ReadPidFile(Path(kLauncherPidFile));
  if (!pid.ok()) return false;  // not rank 0's node
  process_ = *pid;
  stderr_path_ = Path(kLauncherStderr);
  const std::string name(Name(launcher_));
  absl::StatusOr<std::string> end = ReadFileToString(Path(kLauncherEndFile));
  absl::StatusOr<LauncherEnd> known =
      end.ok() ? ParseLauncherEnd(*end) : end.status();
  if (known.ok()) {
    end_ = *known;
    ended_ms_ = clock_->NowMs();
  } else if (IsSameProcessRunning(*pid, *processes_)) {
    // Not this agent's child any more: seen ending by its pid, and its exit
    // status stays unknown.
    running_ = true;
    LogInfo(
        absl::StrCat(Where(key_), ": reattached to ", name, " pid ", pid->pid));
  } else {
    LogWarning(absl::StrCat(Where(key_), ": ", name,
                            " ended while the agent was down"));
    End(std::nullopt, /*asked=*/false);
  }
  return true;
}

void LaunchProcess::Check(bool asked) {
  if (!running_) return;
  std::optional<ExitStatus> status;
  if (is_child_) {
    status = processes_->TryWait(process_.pid);
    if (!status) return;
  } else if (IsSameProcessRunning(process_, *processes_)) {
    return;
  }
  End(status, asked);
}

void LaunchProcess::Signal(int sig) {
  if (running_) processes_->SignalGroup(process_.pid, sig);
}

void LaunchProcess::End(const std::optional<ExitStatus>& status, bool asked) {
  running_ = false;
  ended_ms_ = clock_->NowMs();
  // Whatever it left in its group goes with it. (Not after a reattach: the
  // group of a launcher this agent did not reap may be another's by now.)
  if (is_child_) processes_->SignalGroup(process_.pid, SIGKILL);
  end_ = ClassifyLauncherExit(
      launcher_, status, ReadFileTail(stderr_path_, kStderrTailBytes), asked);
  if (absl::Status written =
          WriteFileAtomically(Path(kLauncherEndFile), FormatLauncherEnd(*end_));
      !written.ok()) {
    LogWarning(absl::StrCat(Where(key_), ": ", written.message()));
  }
  if (!end_->cancelled.empty()) {
    LogWarning(absl::StrCat(Where(key_), ": ", end_->cancelled));
  } else if (!end_->error.empty()) {
    LogWarning(absl::StrCat(Where(key_), ": ", end_->error, " (see ",
                            stderr_path_, ")"));
  } else {
    LogInfo(absl::StrCat(Where(key_), ": ", std::string(Name(launcher_)),
                         " pid ", process_.pid, " ended"));
  }
}

}  // namespace hpcai500::agent
