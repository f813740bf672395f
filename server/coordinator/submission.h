// A submission's checks, in two steps: ParseSubmissionText reads no state,
// so Coordinator::Submit runs it before it takes its lock; PrepareSpecs
// then checks the parsed specs against the queues and the registered nodes
// (and CheckSweepsAreOwn against the stored runs) under the lock, in the
// order and with the answers of one pass over the specs.
//
// Thread-safe: ParseSubmissionText is a pure function; the others read the
// scheduler or the store, which the caller guards.
#ifndef HPCAI500_SERVER_COORDINATOR_SUBMISSION_H_
#define HPCAI500_SERVER_COORDINATOR_SUBMISSION_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/queues.h"
#include "server/coordinator/scheduler.h"
#include "server/store/store.h"

namespace hpcai500 {

// A submission's text parsed: one spec, or a suite (methodology/suite.h) of
// several, each with its runs (R repetitions: seeds seed, seed+1, ...) or
// the error that refuses it.
struct ParsedSubmission {
  struct Spec {
    std::string yaml;  // as stored
    absl::StatusOr<std::vector<v1::RunSpec>> run_specs;
  };
  // The text's own error (a suite that does not parse; then the one spec's
  // error when it says more); OK otherwise.
  absl::Status error;
  std::string suite;  // the suite's name ("" for one spec)
  std::vector<Spec> specs;
};

// Parses `spec_yaml` against `registry`. One plain spec keeps the text as
// the user wrote it (comments, layout); the one item of a `suite:` file is
// not the whole text.
ParsedSubmission ParseSubmissionText(std::string_view spec_yaml,
                                     const Registry& registry);

// One spec of a submission, checked, ready to store.
struct PreparedSpec {
  std::string yaml;
  std::vector<v1::RunSpec> run_specs;  // one per repetition
  QueueChoice choice;
};

// Every spec of `parsed` (whose error is OK) checked in turn: its own parse
// error, then the queue it goes to (ChooseQueue: its runs take the queue's
// time limit) and whether the nodes registered so far could ever hold it
// (FailedPrecondition naming the need and the capacity; a scheduler that
// knows no node yet lets it queue). The first error refuses all, named by
// the spec's number in a suite.
absl::StatusOr<std::vector<PreparedSpec>> PrepareSpecs(
    const ParsedSubmission& parsed, const Scheduler& scheduler);

// PermissionDenied when a spec of `prepared` names a sweep (RunSpec.sweep)
// that holds a run of another user than `user`: a sweep id is its
// submitter's, so nobody adds runs to another user's scaling study.
absl::Status CheckSweepsAreOwn(const std::vector<PreparedSpec>& prepared,
                               const std::string& user, Store& store);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_SUBMISSION_H_
