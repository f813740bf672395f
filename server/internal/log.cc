#include "server/internal/log.h"

#include <cstdio>
#include <string>

namespace hpcai500 {

void LogLine(std::string_view text) {
  std::string line = "hpcai500d: ";
  line.append(text.data(), text.size());
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace hpcai500
