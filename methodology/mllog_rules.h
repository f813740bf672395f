// The structural rules of MLCommons' training compliance checker
// (mlperf_logging.compliance_checker, ruleset common.yaml) that every
// hpcai500 worker log keeps, whatever its workload: the rules
// tests/worker/image_classification_integration_test.cc holds the worker
// to, checked here on one rank's lines of one attempt so that a bundle's
// MLLOG can be judged offline (methodology/bundle_verify.h).
//
// Thread-safe: a free function.
#ifndef HPCAI500_METHODOLOGY_MLLOG_RULES_H_
#define HPCAI500_METHODOLOGY_MLLOG_RULES_H_

#include <vector>

#include "absl/status/status.h"
#include "common/events.h"

namespace hpcai500 {

// OK when `lines`, one rank's lines of one attempt in file order, keep the
// rules: seq runs 1, 2, ... without a gap; every line's metadata.rank is
// `rank`; init_start and init_stop at most once each, in that order, before
// run_start; run_start at most once; each submission_* key at most once;
// epoch_start, epoch_stop, eval_start, eval_stop and eval_accuracy carry
// metadata.epoch_num and come after run_start (and before run_stop);
// block_start carries first_epoch_num and an epoch_count > 0. When
// `finished` (the attempt that ended the run), run_start, and run_stop
// exactly once, after
// run_start and no earlier in time, with metadata.status "success".
// Returns InvalidArgument naming the rule and the line (its seq).
absl::Status CheckMllogRules(const std::vector<EventLine>& lines, int rank,
                             bool finished);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_MLLOG_RULES_H_
