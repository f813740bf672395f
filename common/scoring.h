// Valid FLOPS (ARCHITECTURE.md): VFLOPS = FLOPS x (quality / target)^n, with
// FLOPS = 3 x forward FLOPs per sample x samples / training seconds, and the
// aggregation of a submission's repetitions.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_SCORING_H_
#define HPCAI500_COMMON_SCORING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/events.h"
#include "common/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The FLOP convention stored with every score.
inline constexpr char kFlopConvention[] =
    "3x forward; convolutions and matrix products; multiply-add = 2";

// VFLOPS for the given inputs. No cap: quality above target raises it.
double ValidFlops(double flops, double quality, double target, double n);

// Scores a finished run from all its ranks' events of one attempt. Quality is
// rank 0's last eval_accuracy; samples are the sum of every rank's
// hpcai500_epoch_stats samples; training seconds are rank 0's run_start to
// run_stop minus its evaluation intervals (eval_start..eval_stop). Returns
// FailedPrecondition naming what is missing (no run_stop, no accuracy, no
// forward FLOPs, zero training time). Energy is the sum of every rank's
// hpcai500_epoch_stats energy_joules (each rank reports only the domains it
// owns); with it, Valid FLOPS per watt = VFLOPS / (energy / training seconds).
absl::StatusOr<v1::Score> ScoreRun(const std::vector<EventLine>& events,
                                   const ConfigInfo& config,
                                   const WorkloadInfo& workload);

// Per-epoch summaries across ranks: samples summed, seconds of the slowest
// rank, throughput = samples / seconds, rank 0's loss and accuracy (-1 when
// the epoch was not evaluated). Ordered by epoch.
std::vector<v1::EpochSummary> SummarizeEpochs(
    const std::vector<EventLine>& events);

struct Aggregate {
  double mean = 0;
  double min = 0;
  double max = 0;
};
// The submission score over its runs: the mean with best and worst dropped
// when there are 3 or more, the plain mean below that; min and max are over
// all values. An empty input gives zeros.
Aggregate AggregateRepetitions(const std::vector<double>& values);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_SCORING_H_
