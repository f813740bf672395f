// The exit codes of `hpcai500`, and the one a finished run stands for.
//
// Thread-safe: constants and a pure function.
#ifndef HPCAI500_CLI_CLIENT_EXIT_CODES_H_
#define HPCAI500_CLI_CLIENT_EXIT_CODES_H_

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// For submit --wait and watch, kExitOk means the run finished and reached
// its target quality.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBelowTarget = 1;
inline constexpr int kExitRegressed = 1;  // regress: a metric regressed
inline constexpr int kExitFailed = 2;     // failed, cancelled, or an error
inline constexpr int kExitRefused = 3;    // the spec was refused
inline constexpr int kExitUsage = 64;     // bad command line (sysexits)
inline constexpr int kExitNoInput = 66;   // a file could not be read
// The coordinator could not be reached (after every retry, for a submit),
// or could not store (a full disk): nothing was refused or stored; the same
// command may succeed later (EX_TEMPFAIL).
inline constexpr int kExitUnavailable = 75;

// The exit code a finished run stands for: 0 succeeded and reached its
// target, 1 succeeded below it, 2 otherwise (failed, cancelled, unscored).
inline int ExitCodeForRun(const v1::Run& run) {
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.has_score()) {
    return kExitFailed;
  }
  return run.score().reached_target() ? kExitOk : kExitBelowTarget;
}

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLIENT_EXIT_CODES_H_
