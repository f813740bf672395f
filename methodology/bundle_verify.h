// Verification of a result bundle (methodology/bundle.h), offline: what
// `hpcai500 verify` prints and what a coordinator that receives a bundle
// requires before it ranks it. Each check is one line:
//
//   archive      the gzip/ustar framing, within the size and entry limits
//   manifest     manifest.json parses and is of this format
//   signature    manifest.sig is the manifest's signature by its site key
//   site key     the site key is the one expected (when one is given)
//   digests      every file is listed with its size and SHA-256, and only
//                those files are there
//   contents     every file parses
//   mllog run N  each rank's MLLOG of each attempt keeps MLCommons' rules
//                (methodology/mllog_rules.h), every rank present
//   score run N  FLOPS and Valid FLOPS (and every other input of the score)
//                recomputed from the MLLOG lines equal the claimed score,
//                and so do the claimed per-epoch results
//   convergence  the reference points are this registry's, and the check
//                recomputed gives the claimed verdict and factor
//   submission   the claimed leaderboard row's Valid FLOPS is the
//                aggregate of the recomputed runs' (when there is a row)
//
// What it cannot prove: that the hardware and software were what the
// inventory says (docs/design.md "Result bundles").
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_BUNDLE_VERIFY_H_
#define HPCAI500_METHODOLOGY_BUNDLE_VERIFY_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "methodology/bundle.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

struct BundleCheck {
  std::string name;  // "signature", "score run 12", ...
  bool ok = false;
  std::string detail;  // what held, or why not
};

// What a run's MLLOG lines give, recomputed.
struct RecomputedRun {
  v1::Score score;
  // Per-epoch results (SummarizeEpochs) of the epochs the score counts.
  std::vector<v1::EpochSummary> epochs;
  bool resumed = false;  // made of several attempts
};

struct BundleReport {
  std::vector<BundleCheck> checks;  // in the order above
  // From the manifest, when it could be read.
  std::optional<BundleManifest> manifest;
  // The bundle's contents, when they parse.
  std::optional<BundleContents> contents;
  // Each run as recomputed from its MLLOG, by run id.
  std::map<int64_t, RecomputedRun> recomputed;

  // Whether every check held (and there was at least one).
  bool ok() const;
  // The first check that failed, or null.
  const BundleCheck* FirstFailure() const;
};

struct VerifyOptions {
  ArchiveLimits limits;
  // Non-empty: the site key (64 hex digits) the bundle must be signed by.
  std::string expected_site_key;
};

// Verifies the bundle `bytes` against `registry`. Never fails as a call: a
// bundle that cannot be read is a report whose failing check says why;
// checks that need what a failed one would give are left out.
BundleReport VerifyBundle(absl::string_view bytes, const Registry& registry,
                          const VerifyOptions& options = {});

// The score and epochs of `run` recomputed from its MLLOG lines alone (a
// resumed run over the epochs its attempts kept, as the coordinator scores
// it). FailedPrecondition as ScoreRun, InvalidArgument naming a line that
// does not parse, NotFound for a workload or config not in `registry`.
absl::StatusOr<RecomputedRun> RecomputeRun(const BundledRun& run,
                                           const Registry& registry);

// "" when the claimed per-epoch results `claimed` are `recomputed` (epoch,
// samples, seconds and accuracy, within 1e-9 relative), else the first
// epoch that differs.
std::string EpochsDifference(
    const google::protobuf::RepeatedPtrField<v1::EpochSummary>& claimed,
    const std::vector<v1::EpochSummary>& recomputed);

// "" when `recomputed` equals `claimed` in every input and result (within
// 1e-9 relative), else the first field that differs, with both values.
std::string ScoreDifference(const v1::Score& claimed,
                            const v1::Score& recomputed);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_BUNDLE_VERIFY_H_
