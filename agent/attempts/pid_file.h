// Per-rank state files in an attempt folder: the worker's pid and start time
// (so a restarted agent can tell its worker from a process that reused the
// pid), the acknowledged event seq, and the recorded exit.
//
// Thread-safe: free functions.
#ifndef HPCAI500_AGENT_ATTEMPTS_PID_FILE_H_
#define HPCAI500_AGENT_ATTEMPTS_PID_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/system/process.h"

namespace hpcai500::agent {

struct PidRecord {
  pid_t pid = 0;
  uint64_t start_time = 0;  // field 22 of /proc/PID/stat
};

// Writes "PID START_TIME\n" atomically.
absl::Status WritePidFile(const std::string& path, const PidRecord& record);

// NotFound when absent, InvalidArgument (naming the file) when malformed.
absl::StatusOr<PidRecord> ReadPidFile(const std::string& path);

// True when record.pid runs and started at record.start_time (a reused pid
// has another start time).
bool IsSameProcessRunning(const PidRecord& record, ProcessLauncher& processes);

// The acknowledged seq of a rank: 0 when the file is absent.
absl::StatusOr<int64_t> ReadAckedSeq(const std::string& path);
absl::Status WriteAckedSeq(const std::string& path, int64_t seq);

// A worker's recorded exit ("EXIT_CODE SIGNAL ERROR...").
struct ExitRecord {
  ExitStatus status;
  std::string error;
};
absl::Status WriteExitFile(const std::string& path, const ExitRecord& record);
absl::StatusOr<ExitRecord> ReadExitFile(const std::string& path);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_PID_FILE_H_
