#include "agent/internal/log.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hpcai500::agent_internal {
namespace {

absl::Mutex log_mu;
std::string& NodeName() {
  static std::string* node = new std::string("-");
  return *node;
}

void Write(char level, absl::string_view message) {
  absl::MutexLock lock(&log_mu);
  std::string line =
      absl::StrFormat("%c %s hpcai500-agent node=%s %s\n", level,
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                       absl::UTCTimeZone()),
                      NodeName(), message);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetLogNode(absl::string_view node) {
  absl::MutexLock lock(&log_mu);
  NodeName() = std::string(node);
}

void LogInfo(absl::string_view message) { Write('I', message); }
void LogWarning(absl::string_view message) { Write('W', message); }
void LogError(absl::string_view message) { Write('E', message); }

std::string Where(const v1::AttemptKey& key, int rank) {
  std::string where =
      absl::StrCat("run=", key.run_id(), " attempt=", key.attempt());
  if (rank >= 0) absl::StrAppend(&where, " rank=", rank);
  return where;
}

}  // namespace hpcai500::agent_internal
