// The scaling pages' data, computed here so that every page and script
// reads the same numbers:
// - GET /api/v1/scaling?system=S&workload=W[&sweep=ID]: one system's scored
//   runs of one workload, per configuration (config, precision,
//   compression, scaling mode; never averaged across them), Valid FLOPS,
//   parallel efficiency and where each rank's epoch time went against the
//   number of devices;
// - GET /api/v1/index/systems and /api/v1/index/series: what there is to
//   choose from (systems x workloads with scored runs; spec names with their
//   run counts and last run), for the index pages.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_HTTP_RUN_SCALING_H_
#define HPCAI500_SERVER_HTTP_RUN_SCALING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// Whether `run` counts for scaling: succeeded with a score, not
// invalidated, of `system` and `workload`, and of `sweep` when one is
// chosen (non-empty).
bool CountsForScaling(const v1::Run& run, const std::string& system,
                      const std::string& workload, const std::string& sweep);

// The scaling of `system` on `workload` from `runs` (any order; those
// CountsForScaling refuses are left out) as one JSON object:
//   {"system", "workload", "sweep",
//    "sweeps": [ids of the sweeps among the runs, newest first],
//    "configurations": [{"config", "precision", "compression", "scaling",
//       "points": [{"devices", "nodes", "ranks_per_node", "runs",
//                   "valid_flops", "efficiency", "compute_seconds",
//                   "input_seconds", "comm_seconds"}]}]}
// Configurations in (config, precision, compression, scaling) order, points
// fewest devices first. valid_flops is the mean over the point's runs
// (repetitions, sweeps); efficiency the Valid FLOPS per device over that of
// the configuration's fewest devices (1: perfect). The three *_seconds are
// each epoch's seconds per rank in compute, input wait and communication,
// averaged over the point's epochs, ranks and runs, from `ranks` (run id ->
// its RunRanks; a run missing there adds nothing to them), all 0 when no
// run measured them. `scaling` is "" for runs no sweep submitted.
std::string RunScalingJson(
    const std::string& system, const std::string& workload,
    const std::string& sweep, const std::vector<v1::Run>& runs,
    const std::map<int64_t, v1::RunRanksResponse>& ranks);

// {"systems": [{"system", "workload", "runs", "last_run_id",
// "last_finished_ms"}]}: each (system, workload) with scored runs (valid,
// succeeded), by system then workload; runs counts those.
std::string SystemsIndexJson(const std::vector<v1::Run>& runs);

// {"series": [{"name", "workload", "system", "runs", "scored",
// "last_run_id", "last_state", "last_created_ms"}]}: each spec name (a
// history series), by name; runs counts every run of the name, scored
// those with a valid score, and the last run is the newest (highest id),
// whose workload and system are shown.
std::string SeriesIndexJson(const std::vector<v1::Run>& runs);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_RUN_SCALING_H_
