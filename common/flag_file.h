// Reading a small file a flag names (a token, a certificate, a key) whole,
// with errors that name the flag and the path alike in every binary.
//
// Thread-safe: a free function.
#ifndef HPCAI500_COMMON_FLAG_FILE_H_
#define HPCAI500_COMMON_FLAG_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpcai500 {

// The whole text of the file at `path`, which `flag` ("--tls-ca") named.
// NotFound "FLAG PATH: cannot read (REASON)" when it cannot be read;
// InvalidArgument "FLAG PATH: is larger than MAX bytes" past `max_bytes`
// (a wrong file, read no further).
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag,
                                         const std::string& path,
                                         size_t max_bytes);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_FLAG_FILE_H_
