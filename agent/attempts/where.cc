// The "run=N attempt=N rank=N" prefix of an agent log line.
#include "agent/attempts/where.h"

#include "absl/strings/str_cat.h"

namespace hpcai500::agent {

std::string Where(const v1::AttemptKey& key, int rank) {
  std::string where =
      absl::StrCat("run=", key.run_id(), " attempt=", key.attempt());
  if (rank >= 0) absl::StrAppend(&where, " rank=", rank);
  return where;
}

}  // namespace hpcai500::agent
