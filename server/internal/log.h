// Operator log lines of hpcai500d: one line per event on stderr, written with
// a single call so lines from different threads never interleave.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_INTERNAL_LOG_H_
#define HPCAI500_SERVER_INTERNAL_LOG_H_

#include <string_view>

namespace hpcai500 {

// Writes "hpcai500d: <text>\n" to stderr.
void LogLine(std::string_view text);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_INTERNAL_LOG_H_
