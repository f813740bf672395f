// Starting, reaping and signalling worker processes, behind an interface so
// tests can replace real processes with a fake.
//
// Thread-safe: PosixProcessLauncher keeps no state; fakes say their own.
#ifndef HPCAI500_AGENT_SYSTEM_PROCESS_H_
#define HPCAI500_AGENT_SYSTEM_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hpcai500::agent {

// What to start. Never a shell command line: argv[0] is the executable's
// path and the rest are its arguments, passed as they are.
struct LaunchSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "KEY=VALUE": the child's whole environment
  std::string stdout_path;       // created if absent, appended to
  std::string stderr_path;       // created if absent, appended to
  std::string cwd;               // empty: the agent's
};

struct ExitStatus {
  int exit_code = -1;  // -1 when killed by a signal or unknown
  int signal = 0;      // 0 when it exited normally
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts spec.argv in a new session (so it leads its own process group and
  // outlives the agent), stdin from /dev/null. Returns its pid, or an error
  // naming the executable when it could not be started (exec failures
  // included).
  virtual absl::StatusOr<pid_t> Launch(const LaunchSpec& spec) = 0;

  // Reaps a child of this process without blocking. Returns nullopt while it
  // runs.
  virtual std::optional<ExitStatus> TryWait(pid_t pid) = 0;

  // Sends sig to the whole process group led by pgid. A group that no longer
  // exists is not an error.
  virtual void SignalGroup(pid_t pgid, int sig) = 0;

  // The start time of a live process (field 22 of /proc/PID/stat, clock ticks
  // since boot). NotFound when no such process runs (zombies included).
  virtual absl::StatusOr<uint64_t> StartTime(pid_t pid) = 0;

  // Sends sig to one process (a rank another process started, which may
  // not lead a group). A process that no longer exists is not an error.
  virtual void SignalProcess(pid_t pid, int sig) = 0;

  // For each of `arguments`, a live process one of whose arguments (after
  // argv[0]) is exactly it; arguments no process has are left out. How an
  // agent finds the ranks a launcher (mpirun, srun) started, by their unique
  // --events-file paths: one look at every process for all of them.
  virtual std::map<std::string, pid_t> FindByArguments(
      const std::set<std::string>& arguments) = 0;
};

// Real processes via fork/execve.
class PosixProcessLauncher final : public ProcessLauncher {
 public:
  absl::StatusOr<pid_t> Launch(const LaunchSpec& spec) override;
  std::optional<ExitStatus> TryWait(pid_t pid) override;
  void SignalGroup(pid_t pgid, int sig) override;
  absl::StatusOr<uint64_t> StartTime(pid_t pid) override;
  void SignalProcess(pid_t pid, int sig) override;
  // Reads /proc/PID/cmdline of every process (those this user may read),
  // once, stopping when every argument is found.
  std::map<std::string, pid_t> FindByArguments(
      const std::set<std::string>& arguments) override;
};

// Parses the start time (field 22) out of the text of /proc/PID/stat.
// NotFound for a zombie or dead process ('Z' or 'X' state), InvalidArgument
// when the text does not have the expected shape.
absl::StatusOr<uint64_t> ParseProcStatStartTime(const std::string& stat);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SYSTEM_PROCESS_H_
