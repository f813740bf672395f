// Valid FLOPS (docs/design.md "Valid FLOPS, levels and the FLOP
// convention"): VFLOPS = FLOPS x (quality / target)^n, with
// FLOPS = 3 x forward FLOPs per sample x samples / training seconds, and the
// aggregation of a submission's repetitions.
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_SCORING_H_
#define HPCAI500_METHODOLOGY_SCORING_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/events.h"
#include "methodology/registry.h"
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
// forward FLOPs, zero training time). A run of workload noop
// (kNoopWorkload) needs only the run_start/run_stop pair: it scores quality,
// FLOPS and Valid FLOPS 0 against its target 0 (reached). Energy is the sum
// of every rank's
// hpcai500_epoch_stats energy_joules (each rank reports only the domains it
// owns); with it, Valid FLOPS per watt = VFLOPS / (energy / training seconds).
absl::StatusOr<v1::Score> ScoreRun(const std::vector<EventLine>& events,
                                   const ConfigInfo& config,
                                   const WorkloadInfo& workload);

// One attempt of a resumed run and the epochs of it the final model is made
// of: (after_epoch, through_epoch], or every epoch after after_epoch up to
// its run_stop for the final attempt (through_epoch < 0).
struct AttemptEvents {
  std::vector<EventLine> events;
  int after_epoch = 0;
  int through_epoch = -1;
};

// Scores a run made of several attempts, each resuming from the checkpoint
// the one before it wrote at its through_epoch (docs/design.md "Resumed
// runs"). Every epoch counts once, from the attempt that kept it: samples
// and energy are those epochs' hpcai500_epoch_stats; training seconds are
// each earlier attempt's rank-0 run_start to its hpcai500_checkpoint of
// through_epoch, plus the final attempt's run_start to run_stop, minus the
// evaluations of the kept epochs. What an earlier attempt ran after that
// checkpoint is lost_seconds, kept out of train_seconds. Quality is the
// final attempt's. FailedPrecondition as ScoreRun, or naming the attempt
// whose checkpoint or run_start is missing.
absl::StatusOr<v1::Score> ScoreAttempts(
    const std::vector<AttemptEvents>& attempts, const ConfigInfo& config,
    const WorkloadInfo& workload);

// The events of the epochs each attempt keeps (and the final attempt's
// events outside any epoch), in attempt order: what SummarizeEpochs reads
// for a resumed run.
std::vector<EventLine> KeptEvents(const std::vector<AttemptEvents>& attempts);

// Per-epoch summaries across ranks: samples summed, seconds of the slowest
// rank, throughput = samples / seconds, rank 0's loss and accuracy (-1 when
// the epoch was not evaluated). Ordered by epoch.
std::vector<v1::EpochSummary> SummarizeEpochs(
    const std::vector<EventLine>& events);

// Each rank's hpcai500_epoch_stats of one attempt as RankEpoch rows (attempt
// `attempt`), ordered by epoch then rank; a repeated (rank, epoch) keeps
// its last line. Members an older worker did not write read 0.
std::vector<v1::RankEpoch> SummarizeRankEpochs(
    const std::vector<EventLine>& events, int32_t attempt);

struct Aggregate {
  double mean = 0;
  double min = 0;
  double max = 0;
};
// The submission score over its runs: the mean with best and worst dropped
// when there are 3 or more, the plain mean below that; min and max are over
// all values. An empty input gives zeros.
Aggregate AggregateRepetitions(const std::vector<double>& values);

// The largest coefficient of variation, in percent, of a submission's
// repetitions' throughput before it is marked unrepeatable: the
// leaderboard's default (hpcai500d --max-throughput-cv) and regress's
// (--max-cv). MLPerf and SPEC report spread without such a mark; 2% is what
// repeated runs on a quiet node keep (docs/design.md "Repeatability").
inline constexpr double kDefaultMaxThroughputCvPct = 2;

// How much repetitions of one measurement agree: the sample standard
// deviation over the mean (0.02 is 2%); 0 for fewer than two values or a
// mean of 0.
double CoefficientOfVariation(const std::vector<double>& values);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SCORING_H_
