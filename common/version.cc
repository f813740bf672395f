// The version line of common/version.h; HPCAI500_VERSION and
// HPCAI500_GIT_REVISION are set for this file alone (common/CMakeLists.txt).
#include "common/version.h"

#include <cstring>

#ifndef HPCAI500_VERSION
#define HPCAI500_VERSION "dev"
#endif
#ifndef HPCAI500_GIT_REVISION
#define HPCAI500_GIT_REVISION "unknown"
#endif

namespace hpcai500 {

std::string_view ProjectVersion() { return HPCAI500_VERSION; }

std::string ProgramVersion(std::string_view program) {
  return std::string(program) + " " HPCAI500_VERSION
                                " (git " HPCAI500_GIT_REVISION ")";
}

bool PrintVersionIfAsked(std::string_view program, int argc,
                         const char* const* argv, std::ostream& out) {
  if (argc != 2 || std::strcmp(argv[1], "--version") != 0) return false;
  out << ProgramVersion(program) << "\n";
  return true;
}

}  // namespace hpcai500
