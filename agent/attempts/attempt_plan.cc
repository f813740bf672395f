// The rank files of an attempt plan, named by AttemptLayout.
#include "agent/attempts/attempt_plan.h"

#include "agent/attempts/attempt_layout.h"

namespace hpcai500::agent {

RankPlan RankPaths(const std::string& attempt_dir, int rank) {
  auto path = [&](RankFile file) {
    return AttemptLayout::RankPath(attempt_dir, rank, file);
  };
  RankPlan plan;
  plan.rank = rank;
  plan.events_path = path(RankFile::kEvents);
  plan.pid_path = path(RankFile::kPid);
  plan.acked_path = path(RankFile::kAcked);
  plan.exit_path = path(RankFile::kExit);
  plan.done_path = path(RankFile::kDone);
  plan.launch.stdout_path = path(RankFile::kStdout);
  plan.launch.stderr_path = path(RankFile::kStderr);
  return plan;
}

}  // namespace hpcai500::agent
