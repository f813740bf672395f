// `--version` of hpcai500d, hpcai500-agent and the hpcai500 CLI: the
// program's name, the project version and the git revision it was built
// from ("hpcai500d 0.1.0 (git dc145d459e25)"), as hpcai500-worker --version
// prints its own (worker/version.h, which adds LibTorch's).
#ifndef HPCAI500_COMMON_VERSION_H_
#define HPCAI500_COMMON_VERSION_H_

#include <ostream>
#include <string>
#include <string_view>

namespace hpcai500 {

// The project's version alone ("0.1.0"): what an agent registers with and
// reports in its inventory.
std::string_view ProjectVersion();

std::string ProgramVersion(std::string_view program);

// True, having printed ProgramVersion, when the arguments are exactly
// `--version`: main() then exits 0 before parsing anything else.
bool PrintVersionIfAsked(std::string_view program, int argc,
                         const char* const* argv, std::ostream& out);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_VERSION_H_
