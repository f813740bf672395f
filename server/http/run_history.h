// The history page's data (#/history/NAME, GET /api/v1/history?name=NAME):
// a spec's scored runs oldest first and, for each metric the page draws,
// every run's value with the band BandsOverHistory (methodology/regress_band.h)
// judged it against. The coordinator computes the band so that the page
// draws `hpcai500 regress`'s band from the one implementation, never a copy.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_HTTP_RUN_HISTORY_H_
#define HPCAI500_SERVER_HTTP_RUN_HISTORY_H_

#include <string>
#include <vector>

#include "methodology/regress_band.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The history of spec `name` from `runs` (any order; runs without a score
// and invalidated runs are left out) as one JSON object:
//   {"name": NAME,
//    "band": {"window", "min_history", "threshold", "min_band_pct"},
//    "runs": [{"id", "finished_ms",
//              "metrics": {METRIC: {"value", "low", "high", "regression"}}}]}
// with the runs oldest (lowest id) first, METRIC each metric the page draws
// (valid_flops, throughput, quality), and low and high null while a metric
// has no band yet. Numbers are JSON numbers (ids and times fit a double
// exactly).
std::string RunHistoryJson(const std::string& name,
                           const std::vector<v1::Run>& runs);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_RUN_HISTORY_H_
