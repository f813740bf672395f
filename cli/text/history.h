// `hpcai500 history`: accounting like Slurm's sacct, one row per run: who
// ran it in which queue, on which nodes, how it ended, how long it took and
// what it cost in node-hours. Pure: rows are computed from listed runs and
// a `now`, printed as a table or as one JSON array; --since/--until text is
// parsed here.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_TEXT_HISTORY_H_
#define HPCAI500_CLI_TEXT_HISTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// One run's accounting.
struct HistoryRow {
  int64_t run_id = 0;
  std::string name;
  std::string user;
  std::string queue;
  std::vector<std::string> nodes;  // of the last attempt
  v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
  int64_t submit_ms = 0;
  int64_t start_ms = 0;  // 0: never started
  int64_t end_ms = 0;    // 0: not ended
  int64_t wall_ms = 0;   // end (or now, while it runs) - start
  double node_hours = 0;
  // An aborted run: the node-hours of the epochs it did not train.
  double node_hours_saved = 0;
  std::string exit_reason;  // the run's error, else its last attempt's
  int attempts = 0;
};

// Sum over the run's attempts of nodes x (finished - started), in hours. An
// attempt not finished counts up to `now_ms` while the run is active, up to
// the run's end once it ended; one never started counts nothing.
double NodeHours(const v1::Run& run, int64_t now_ms);

// The accounting row of `run` at `now_ms`.
HistoryRow HistoryRowOf(const v1::Run& run, int64_t now_ms);

// A --since / --until value as Unix milliseconds: "YYYY-MM-DD" (midnight),
// "YYYY-MM-DDTHH:MM" or "YYYY-MM-DDTHH:MM:SS", all UTC, or a duration
// before `now_ms`: a positive integer and a unit s, m, h, d or w ("2h",
// "7d"). InvalidArgument naming the accepted forms otherwise.
absl::StatusOr<int64_t> ParseHistoryTime(absl::string_view text,
                                         int64_t now_ms);

// sacct's Elapsed: "HH:MM:SS", or "D-HH:MM:SS" from one day.
std::string FormatElapsed(int64_t ms);

// The rows as an aligned table, times in `zone`.
std::string FormatHistoryTable(const std::vector<HistoryRow>& rows,
                               absl::TimeZone zone);

// The rows as one JSON array (one object per row; each time both in Unix
// ms and as ISO 8601 UTC, null when unset), ending in a newline.
std::string HistoryJson(const std::vector<HistoryRow>& rows);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_HISTORY_H_
