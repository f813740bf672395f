// The prefix that ties an agent log line to a worker: "run=3 attempt=1
// rank=0". The lines themselves go through common/log.h.
//
// Thread-safe: a free function.
#ifndef HPCAI500_AGENT_ATTEMPTS_WHERE_H_
#define HPCAI500_AGENT_ATTEMPTS_WHERE_H_

#include <string>

#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// "run=3 attempt=1 rank=0" (rank omitted when < 0).
std::string Where(const v1::AttemptKey& key, int rank = -1);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_WHERE_H_
