// Small file helpers the agent's state files are written and read with.
//
// Thread-safe: free functions; concurrent writers of one path are the
// caller's problem.
#ifndef HPCAI500_AGENT_SYSTEM_FILES_H_
#define HPCAI500_AGENT_SYSTEM_FILES_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hpcai500::agent {

// Replaces path's contents atomically: writes a temporary file beside it,
// flushes it and renames it over path. Readers see the old or the new
// contents, never a mix.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& contents);

// The whole file. NotFound when it does not exist.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// The first max_bytes bytes of the file ("" when it cannot be read). Works
// for /proc files, whose size reads as 0.
std::string ReadFileHead(const std::string& path, size_t max_bytes);

// The last max_bytes bytes of the file ("" when it does not exist).
std::string ReadFileTail(const std::string& path, size_t max_bytes);

// Creates a directory and its parents. OK when it already exists.
absl::Status MakeDirectories(const std::string& path);

bool FileExists(const std::string& path);

// Puts the file `from` at `to` as a hard link, or as a copy where link()
// fails for a reason other than a missing source (EXDEV across file systems,
// EPERM where hard links are not allowed). The copy is written beside `to`,
// flushed and renamed over it, so `to` never holds part of the file. OK when
// `to` already exists. NotFound when `from` does not exist; Internal naming
// both paths when neither works.
absl::Status LinkOrCopyFile(const std::string& from, const std::string& to);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SYSTEM_FILES_H_
