// A result bundle: one file that carries a run's or a submission's result
// out of the coordinator that made it, so that anyone can check it offline
// (methodology/bundle_verify.h) and another coordinator can rank it
// (docs/design.md "Result bundles"). A gzip-compressed ustar archive
// (methodology/bundle_archive.h) of:
//
//   manifest.json          format, subject, the site key, and each file's
//                          path, size and SHA-256
//   manifest.sig           the site key's Ed25519 signature of manifest.json
//   references.json        the convergence reference points the run's config
//                          was judged against
//   submission.json        the claimed leaderboard row (when there is one)
//   runs/<id>/run.json     spec, attempts, per-epoch results (no score, no
//                          inventory)
//   runs/<id>/inventory.json  each attempt's node inventories
//   runs/<id>/score.json   the claimed score: its inputs and result
//   runs/<id>/attempt-<n>/rank-<r>.mllog  each rank's MLLOG lines
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_BUNDLE_H_
#define HPCAI500_METHODOLOGY_BUNDLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "methodology/bundle_archive.h"
#include "methodology/registry.h"
#include "methodology/site_key.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

inline constexpr char kBundleFormat[] = "hpcai500-bundle/1";
inline constexpr char kBundleManifestPath[] = "manifest.json";
inline constexpr char kBundleSignaturePath[] = "manifest.sig";

// What manifest.json says.
struct BundleManifest {
  struct File {
    std::string path;
    int64_t bytes = 0;
    std::string sha256;  // 64 lowercase hex digits
  };
  std::string format;    // kBundleFormat
  std::string subject;   // "run 12" or "submission 4"
  std::string site_key;  // the signer's public key, 64 hex digits
  int64_t created_ms = 0;
  std::vector<File> files;  // every file but the manifest and its signature
};

// A bundle's archive as read, nothing checked but its framing.
struct OpenedBundle {
  std::string manifest_text;  // manifest.json as signed
  std::string signature;      // manifest.sig, whitespace trimmed
  BundleManifest manifest;
  std::map<std::string, std::string> files;  // every other entry by path
};

// One run of a bundle and each rank's MLLOG lines of each attempt.
struct BundledRun {
  // Spec, attempts with their inventories, epochs and score, as the
  // coordinator that made it holds the run.
  v1::Run run;
  std::map<std::pair<int32_t, int32_t>, std::string> mllog;  // (attempt, rank)
};

// What a bundle carries, apart from its manifest.
struct BundleContents {
  std::vector<BundledRun> runs;  // by id
  std::optional<v1::LeaderboardRow> submission;
  std::vector<ReferenceConvergence> references;
};

// The archive entries of `contents`, in the layout above (no manifest).
absl::StatusOr<std::vector<ArchiveEntry>> BundleFiles(
    const BundleContents& contents);

// The bundle of `files` for `subject`: its manifest (made at `created_ms`)
// signed by `key`, then the files. InvalidArgument for an unsafe or repeated
// path.
absl::StatusOr<std::string> SealBundle(const std::vector<ArchiveEntry>& files,
                                       const SiteKey& key,
                                       absl::string_view subject,
                                       int64_t created_ms);

// Reads a bundle's archive and its manifest, checking neither signature nor
// digests. InvalidArgument prefixed "archive: " (ReadArchive's refusals) or
// "manifest: " (missing, not JSON, another format, a malformed entry).
absl::StatusOr<OpenedBundle> OpenBundle(absl::string_view bytes,
                                        const ArchiveLimits& limits = {});

// The contents of `files` (OpenedBundle::files). InvalidArgument naming the
// file that is missing or does not parse.
absl::StatusOr<BundleContents> ParseBundleFiles(
    const std::map<std::string, std::string>& files);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_BUNDLE_H_
