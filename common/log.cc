#include "common/log.h"

#include <cstdio>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/printable.h"

namespace hpcai500 {
namespace {

struct Identity {
  absl::Mutex mu;
  std::string program ABSL_GUARDED_BY(mu) = "hpcai500";
  std::string context ABSL_GUARDED_BY(mu);
};

Identity& GetIdentity() {
  static Identity* identity = new Identity();  // never destroyed
  return *identity;
}

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

void Write(LogLevel level, absl::string_view message) {
  Identity& identity = GetIdentity();
  // Held across the write so that lines from different threads keep the
  // order of their timestamps.
  absl::MutexLock lock(&identity.mu);
  const std::string line = FormatLogLine(level, absl::Now(), identity.program,
                                         identity.context, message);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetLogIdentity(absl::string_view program, absl::string_view context) {
  Identity& identity = GetIdentity();
  absl::MutexLock lock(&identity.mu);
  identity.program = std::string(program);
  identity.context = std::string(context);
}

void LogInfo(absl::string_view message) { Write(LogLevel::kInfo, message); }
void LogWarning(absl::string_view message) {
  Write(LogLevel::kWarning, message);
}
void LogError(absl::string_view message) { Write(LogLevel::kError, message); }

std::string FormatLogLine(LogLevel level, absl::Time time,
                          absl::string_view program, absl::string_view context,
                          absl::string_view message) {
  std::string line = absl::StrCat(
      std::string(1, LevelLetter(level)), " ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone()), " ",
      program, " ");
  if (!context.empty()) absl::StrAppend(&line, context, " ");
  // One record, one line: a newline or an ESC from elsewhere (an agent's
  // text, a worker's error) cannot forge a line or reach the terminal.
  absl::StrAppend(
      &line,
      EscapeControlCharacters(std::string_view(message.data(), message.size()),
                              /*keep_line_breaks=*/false),
      "\n");
  return line;
}

}  // namespace hpcai500
