// The attempt folders an earlier agent left in the workdir, read back with
// AttemptLayout's names so that a restarted agent takes their ranks up
// again (Supervisor::Reattach). Folders and files named otherwise are
// passed over.
//
// Thread-safe: a free function over the file system.
#ifndef HPCAI500_AGENT_ATTEMPTS_ATTEMPT_FOLDERS_H_
#define HPCAI500_AGENT_ATTEMPTS_ATTEMPT_FOLDERS_H_

#include <set>
#include <string>
#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

struct AttemptFolder {
  v1::AttemptKey key;
  // The ranks with a pid file in it (a launcher run's ranks not found yet
  // have none).
  std::set<int> ranks_with_pid_files;
};

// Every WORKDIR/runs/<run_id>/attempt-<n> folder, in the order the file
// system lists them; none when WORKDIR/runs is missing.
std::vector<AttemptFolder> FindAttemptFolders(const std::string& workdir);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_ATTEMPT_FOLDERS_H_
