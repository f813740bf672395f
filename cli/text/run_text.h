// What the CLI prints about runs, from the coordinator's answers: `show`'s
// summary, the result `watch` ends with, `list`'s table and the line each
// action on a run (cancel, hold, release, invalidate, baseline promote)
// answers with. Pure: the RPCs are in cli/commands/commands.h and
// cli/commands/watch.h.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_TEXT_RUN_TEXT_H_
#define HPCAI500_CLI_TEXT_RUN_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// `show RUN`: the run's state, spec and times (in `zone`), then its
// attempts (when more than one, or one that failed), the inventory of each
// attempt's nodes, the epochs and the score with how it was measured.
std::string FormatRunSummary(const v1::Run& run, absl::TimeZone zone);

// "run N STATE[: error]", then quality against target, FLOPS and Valid
// FLOPS when the run has a score.
std::string FormatRunResult(const v1::Run& run);

// One row per run: id, name, workload/config, state, user, created (in
// `zone`).
std::string FormatRunList(const std::vector<v1::Run>& runs,
                          absl::TimeZone zone);

// One line each: "run N: STATE" (after a cancel, or a new state that
// watch saw); "run N: held by U (queued)" or "run N: released (queued)";
// "run N: result invalidated by U; off the leaderboard"; "run N is the
// regress baseline of its series now (promoted by U)".
std::string FormatRunState(int64_t run_id, v1::RunState state);
std::string FormatHeld(int64_t run_id, bool held, const v1::Run& run);
std::string FormatInvalidated(const v1::Run& run);
std::string FormatPromoted(const v1::Baseline& baseline);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_RUN_TEXT_H_
