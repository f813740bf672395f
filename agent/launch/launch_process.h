// LaunchProcess: the one mpirun or srun that rank 0's agent runs for a
// launcher run (agent/launch/launcher.h). It starts the launcher (or takes it
// up again after an agent restart), reaps or polls it, signals its group, and
// records how it ended. Its state lives in the attempt folder beside the
// ranks' files: kLauncherPidFile names the process, kLauncherEndFile how it
// ended, so a restarted agent finds both again.
//
// Not thread-safe: the Supervisor's thread drives it.
#ifndef HPCAI500_AGENT_LAUNCH_LAUNCH_PROCESS_H_
#define HPCAI500_AGENT_LAUNCH_LAUNCH_PROCESS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "agent/attempts/pid_file.h"
#include "agent/launch/launcher.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "common/vocabulary.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The last bytes of a stderr file the agent reads: a worker's, sent with
// WorkerExited, and a launcher's, for how it ended.
inline constexpr size_t kStderrTailBytes = 4096;

class LaunchProcess {
 public:
  // `processes` and `clock` are borrowed and must outlive this.
  LaunchProcess(Launcher launcher, v1::AttemptKey key, std::string attempt_dir,
                ProcessLauncher* processes, Clock* clock);

  // Writes the files `plan` names (its config and hostfile, when set);
  // the error of the first that cannot be written.
  static absl::Status WriteFiles(const LauncherPlan& plan);

  // Starts `plan`'s launch (for `world_size` ranks on `nodes` nodes, for
  // the log) and records its pid (a pid file not written is logged: no
  // reattach after a restart). Returns the error that refuses the start.
  absl::Status Start(const LauncherPlan& plan, int world_size, int nodes);

  // After an agent restart: false when the attempt folder holds no
  // launcher pid file (a node other than rank 0's). Else takes up how the
  // launcher ended, if recorded; or follows it again when its pid still
  // names it; or records that it ended while the agent was down.
  bool Reattach();

  // Reaps the launcher this agent started, or notes that the one it
  // reattached to ended; once ended, classifies and records how (asked:
  // the attempt was being cancelled) and kills what a launcher it started
  // left in its group.
  void Check(bool asked);

  // `sig` to the launcher's group while it runs.
  void Signal(int sig);

  Launcher launcher() const { return launcher_; }
  bool running() const { return running_; }
  int64_t ended_ms() const { return ended_ms_; }
  // Set once it ended.
  const std::optional<LauncherEnd>& end() const { return end_; }
  // Where its stderr goes: the output of every rank it started.
  const std::string& stderr_path() const { return stderr_path_; }

 private:
  // It ended with `status` (nullopt: unknown): see Check.
  void End(const std::optional<ExitStatus>& status, bool asked);
  std::string Path(const char* file) const;

  // Constant after construction.
  const Launcher launcher_;
  const v1::AttemptKey key_;
  const std::string dir_;
  ProcessLauncher* const processes_;
  Clock* const clock_;

  bool running_ = false;
  // Started by this agent (waitpid); else reattached to after a restart
  // (seen ending by its pid, its exit status unknown).
  bool is_child_ = false;
  PidRecord process_;
  std::string stderr_path_;
  int64_t ended_ms_ = 0;
  std::optional<LauncherEnd> end_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_LAUNCH_LAUNCH_PROCESS_H_
