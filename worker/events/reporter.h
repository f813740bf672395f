// RunReporter turns what a run measures (an epoch's statistics, an
// evaluation's result, checkpoints) into the worker's event lines, in the
// order docs/events.md and MLPerf's compliance rules expect; ReportAbort
// ends a run with run_stop "aborted". No LibTorch here.
//
// Thread-safety: as EventLog's (every method may run on any thread; lines
// never interleave). RunReporter remembers whether it has written the
// per-sample FLOPs, so use one from one thread.
#ifndef HPCAI500_WORKER_EVENTS_REPORTER_H_
#define HPCAI500_WORKER_EVENTS_REPORTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "worker/events/event_log.h"

namespace hpcai500::worker {

// One rank's measurements of one training epoch (hpcai500_epoch_stats).
struct EpochStats {
  int64_t samples = 0;
  double seconds = 0;
  double mean_loss = 0;
  double forward_flops = 0;       // this rank's forward passes, all batches
  int64_t other_ops = 0;          // operators not counted as FLOPs
  double compute_seconds = 0;     // forward, backward, optimizer
  double input_wait_seconds = 0;  // indexing, normalising, copying
  std::optional<double> energy_joules;  // absent without a counter
  std::string energy_source;            // with energy_joules
  int64_t comm_bytes = 0;               // gradient all-reduces of the epoch
  double comm_wait_seconds = 0;         // blocked on them
  int64_t skipped_steps = 0;    // non-finite gradients (fp16 loss scaling)
  double loss_scale = 1;        // at the end of the epoch
  int64_t corrupt_samples = 0;  // skipped so far in the run
};

// The quality of the model after an epoch, over the whole evaluation set.
struct EvalResult {
  double quality = 0;          // top-1 (classification) or mAP@0.5
  std::optional<double> top5;  // classification: written as eval_top5
  // Detection: AP@0.5 per class name (NaN for a class with no objects),
  // written as hpcai500_eval_ap50 when top5 is absent.
  std::vector<std::pair<std::string, double>> class_ap;
};

class RunReporter {
 public:
  // Borrows `log` for the reporter's lifetime.
  explicit RunReporter(EventLog* log) : log_(log) {}

  // One event line, as EventLog::Emit (its "file" and "lineno": the caller).
  void Point(std::string_view key, std::string_view value,
             EventType type = EventType::kPointInTime,
             const JsonMembers& metadata = {},
             SourceLine where = SourceLine::Here());

  // hpcai500_forward_flops_per_sample with its counting convention; only
  // the first call writes.
  void ForwardFlopsPerSample(double flops_per_sample);

  // block_start and epoch_start of `epoch`.
  void EpochStart(int epoch);
  // epoch_stop and hpcai500_epoch_stats of `epoch`.
  void EpochStop(int epoch, const EpochStats& stats);
  // eval_start of `epoch`.
  void EvalStart(int epoch);
  // eval_stop (with the pass's seconds), eval_accuracy, eval_top5 or
  // hpcai500_eval_ap50, and block_stop of `epoch`.
  void EvalStop(int epoch, double eval_seconds, const EvalResult& result);
  // hpcai500_checkpoint: `path` was written after `epoch`.
  void Checkpoint(const std::string& path, int epoch);
  // run_stop "success".
  void RunSuccess();

 private:
  EventLog* const log_;
  bool flops_per_sample_written_ = false;
};

// Ends a run that failed: writes "hpcai500-worker rank R: aborted: REASON"
// to stderr and run_stop "aborted" with `reason` to `log` (borrowed for the
// call), its "file" and "lineno" those of the caller. Never throws: a
// run_stop that cannot be written is reported on stderr.
void ReportAbort(EventLog* log, int rank, const std::string& reason,
                 SourceLine where = SourceLine::Here());

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_EVENTS_REPORTER_H_
