// Operator log lines of the service binaries (hpcai500d, hpcai500-agent):
// one line per event on stderr, "<level> <UTC time> <program> [<context>]
// <message>", e.g.
//   I 2026-01-02T03:04:05.678Z hpcai500-agent node=a run=3 attempt=1: ...
// Each line is written with a single call, so lines from different threads
// never interleave. Never one line per event batch (STYLE.md, rule 10).
//
// Thread-safe.
#ifndef HPCAI500_COMMON_LOG_H_
#define HPCAI500_COMMON_LOG_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hpcai500 {

enum class LogLevel { kInfo, kWarning, kError };

// Sets the program name ("hpcai500d") and the context ("node=a", or empty
// for none) shown on every later line. Call once at start-up; until then
// lines name the program "hpcai500" and carry no context.
void SetLogIdentity(absl::string_view program, absl::string_view context);

void LogInfo(absl::string_view message);
void LogWarning(absl::string_view message);
void LogError(absl::string_view message);

// The line Log* writes, newline included: "I 2026-01-02T03:04:05.678Z
// hpcai500d node=a message\n" (the context and its space left out when
// empty). Levels are I, W and E.
std::string FormatLogLine(LogLevel level, absl::Time time,
                          absl::string_view program, absl::string_view context,
                          absl::string_view message);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_LOG_H_
