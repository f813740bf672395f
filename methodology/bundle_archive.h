// The container of a result bundle: a POSIX ustar archive of plain files,
// gzip-compressed (zlib). Written and read here, without libarchive, so
// that the reader checks everything it is given: a bundle comes from
// another site and is read by `hpcai500 verify` and by a coordinator that
// receives it, so nothing in it is trusted.
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_BUNDLE_ARCHIVE_H_
#define HPCAI500_METHODOLOGY_BUNDLE_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpcai500 {

// One plain file of an archive.
struct ArchiveEntry {
  std::string path;  // relative, '/'-separated, at most kMaxArchivePath
  std::string data;
};

// The longest path an entry may have (ustar's name field, no prefix).
inline constexpr size_t kMaxArchivePath = 99;

// What a reader accepts at most. The defaults hold a bundle of a long
// multi-node run (its MLLOG lines are per epoch, not per step) many times
// over, and stop a decompression bomb long before it hurts.
struct ArchiveLimits {
  int64_t max_uncompressed_bytes = 256ll << 20;
  int max_entries = 4096;
};

// The gzip-compressed ustar archive of `entries`, in their order. Returns
// InvalidArgument for an entry whose path IsSafeArchivePath refuses or that
// repeats an earlier path.
absl::StatusOr<std::string> WriteArchive(
    const std::vector<ArchiveEntry>& entries);

// The entries of a gzip-compressed ustar archive, in archive order. Returns
// InvalidArgument naming the problem: not gzip, truncated or corrupt
// compressed data, more than `limits` allow (uncompressed bytes, entries),
// a header whose checksum or fields do not hold, an entry that is not a
// plain file, an unsafe or repeated path, an archive without its end.
absl::StatusOr<std::vector<ArchiveEntry>> ReadArchive(
    absl::string_view compressed, const ArchiveLimits& limits = {});

// Whether `path` may name an entry: 1 to kMaxArchivePath bytes of letters,
// digits, '.', '-', '_' and '/', relative, without empty, "." or ".."
// components.
bool IsSafeArchivePath(absl::string_view path);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_BUNDLE_ARCHIVE_H_
