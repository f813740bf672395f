// The lines of a run's log: what watchers (`hpcai500 watch`, the web page)
// read and the operator log repeats. One owner for their wording, so a run
// restored from the store reads as it did live.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_LOG_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_LOG_H_

#include <cstddef>
#include <string>

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The most of a worker's stderr kept with its exit and shown in errors.
inline constexpr size_t kMaxStderrTailBytes = 8 * 1024;

// "run 3 attempt 1".
std::string Describe(const v1::AttemptKey& key);

// `text` when it fits in `max_bytes`, else "..." and its last `max_bytes`.
std::string TailOf(const std::string& text, size_t max_bytes);

// "rank 1 on node b exited with code 3; stderr tail:\n<tail>" (or "could not
// start: ...", "was killed by signal 9"); the tail is cut to
// kMaxStderrTailBytes.
std::string ExitError(const std::string& node, const v1::WorkerExited& exit);

// "epoch 2/5: 60000 samples in 3.1 s (19354.8 samples/s), loss 0.512,
// accuracy 0.8123" (the metric left out when the epoch was not evaluated).
std::string EpochLine(const v1::EpochSummary& epoch, int epochs,
                      const std::string& metric);

// The last line of a run: "succeeded: <metric> ... Valid FLOPS ...",
// "failed: <error>", "cancelled[: <why>]", "aborted: <why>", or the state's
// name.
std::string FinalLine(const v1::Run& run, const std::string& metric);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_LOG_H_
