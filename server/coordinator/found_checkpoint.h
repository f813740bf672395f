// Whether a checkpoint an agent found on disk (v1::FoundCheckpoint: its
// manifest, common/checkpoint_manifest.h, and the agent's digest of its
// files) may be resumed from although the coordinator never stored its
// event: the node died between the worker writing it and the agent
// delivering the event. It may when it belongs to the run and to the
// earlier attempt the coordinator asked about, is newer than the resume
// point and within the run's epochs, its files are the ones the worker
// wrote (the digests agree), and its event lines continue rank 0's stored
// lines without a gap up to the checkpoint's own event. Then those lines are
// stored as that attempt's, the rows a delivered event would have made, so
// the score counts the epoch once like any other (docs/design.md "Nothing
// lost").
//
// Thread-safe: a pure function.
#ifndef HPCAI500_SERVER_COORDINATOR_FOUND_CHECKPOINT_H_
#define HPCAI500_SERVER_COORDINATOR_FOUND_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// What the coordinator knows to check a found checkpoint against.
struct ResumeFacts {
  int64_t run_id = 0;
  // The earlier attempt whose folder the agent was asked to look into
  // (Assignment.probe_checkpoints_attempt); 0: none was asked for.
  int32_t probed_attempt = 0;
  // The epoch the new attempt resumes from without it (0: from scratch).
  int32_t resume_epoch = 0;
  int32_t epochs = 0;  // the run's epoch budget
  // Every line 1..this of the probed attempt's rank 0 is stored.
  int64_t stored_through_seq = 0;
};

// A found checkpoint that passed: the epoch to resume after and rank 0's
// lines to store for the probed attempt, as (seq, line) in seq order.
struct VerifiedCheckpoint {
  int32_t attempt = 0;
  int32_t epoch = 0;
  std::vector<std::pair<int64_t, std::string>> events;
};

// Checks `found` against `facts`. FailedPrecondition saying why it may not
// be resumed from (the agent could not read it, another run's or attempt's,
// not newer, past the budget, a digest that differs, lines missing between
// the stored ones and the manifest's, lines that do not end with this
// checkpoint's event).
absl::StatusOr<VerifiedCheckpoint> VerifyFoundCheckpoint(
    const v1::FoundCheckpoint& found, const ResumeFacts& facts);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_FOUND_CHECKPOINT_H_
