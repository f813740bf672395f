// The export of a result bundle (methodology/bundle.h) from what the
// coordinator stores: each run's spec, attempts with their nodes'
// inventories, epochs and score, every rank's MLLOG lines of every attempt,
// the submission's leaderboard row, and the reference points of its
// config; sealed with the site key. The bundle is verified
// (methodology/bundle_verify.h) before it is handed out, so that what this
// coordinator signs is what any verifier accepts.
//
// Thread-safe: a function of its arguments; `reads` is called as the pages
// call it.
#ifndef HPCAI500_SERVER_COORDINATOR_BUNDLE_EXPORT_H_
#define HPCAI500_SERVER_COORDINATOR_BUNDLE_EXPORT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "methodology/registry.h"
#include "methodology/site_key.h"
#include "proto/bundle.pb.h"
#include "proto/hpcai500.pb.h"
#include "server/http/coordinator_view.h"

namespace hpcai500 {

// The bundle `request` asks for, made at `now_ms`. InvalidArgument unless
// exactly one of run_id and submission_id is set; NotFound for an unknown
// run or submission; FailedPrecondition for a run that is not succeeded
// and scored (or was invalidated), a submission with such a run or missing
// repetitions, or a bundle that would not verify (naming the check).
absl::StatusOr<v1::ExportBundleResponse> ExportBundle(
    CoordinatorView& reads, const Registry& registry, const SiteKey& key,
    const v1::ExportBundleRequest& request, int64_t now_ms);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_BUNDLE_EXPORT_H_
