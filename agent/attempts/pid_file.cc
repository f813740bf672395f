// A rank's pid, acked and exit files written and read back.
#include "agent/attempts/pid_file.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/system/files.h"

namespace hpcai500::agent {

absl::Status WritePidFile(const std::string& path, const PidRecord& record) {
  return WriteFileAtomically(
      path, absl::StrCat(record.pid, " ", record.start_time, "\n"));
}

absl::StatusOr<PidRecord> ReadPidFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
  PidRecord record;
  int pid = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &pid) || pid <= 0 ||
      !absl::SimpleAtoi(fields[1], &record.start_time)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected 'PID START_TIME'"));
  }
  record.pid = pid;
  return record;
}

bool IsSameProcessRunning(const PidRecord& record, ProcessLauncher& processes) {
  absl::StatusOr<uint64_t> start = processes.StartTime(record.pid);
  return start.ok() && *start == record.start_time;
}

absl::StatusOr<int64_t> ReadAckedSeq(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (absl::IsNotFound(text.status())) return 0;
  if (!text.ok()) return text.status();
  int64_t seq = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &seq) || seq < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a non-negative seq"));
  }
  return seq;
}

absl::Status WriteAckedSeq(const std::string& path, int64_t seq) {
  return WriteFileAtomically(path, absl::StrCat(seq, "\n"));
}

absl::Status WriteExitFile(const std::string& path, const ExitRecord& record) {
  return WriteFileAtomically(
      path, absl::StrCat(record.status.exit_code, " ", record.status.signal,
                         " ", record.error, "\n"));
}

absl::StatusOr<ExitRecord> ReadExitFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::StripTrailingAsciiWhitespace(*text), absl::MaxSplits(' ', 2));
  ExitRecord record;
  if (fields.size() < 2 ||
      !absl::SimpleAtoi(fields[0], &record.status.exit_code) ||
      !absl::SimpleAtoi(fields[1], &record.status.signal)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected 'EXIT_CODE SIGNAL [ERROR]'"));
  }
  if (fields.size() == 3) record.error = std::string(fields[2]);
  return record;
}

}  // namespace hpcai500::agent
