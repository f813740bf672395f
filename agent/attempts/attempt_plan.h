// What one attempt becomes on this node before anything of it exists: its
// folder, its checkpoint folder, the checkpoint it resumes from, and per
// local rank the launch and the state files (AttemptLayout's names).
// PlanAttempt (agent/launch/assignment.h) fills it from a checked
// assignment; the Supervisor starts from it and a restarted agent rebuilds
// the files of a rank with RankPaths.
//
// Thread-safe: plain values and a pure function.
#ifndef HPCAI500_AGENT_ATTEMPTS_ATTEMPT_PLAN_H_
#define HPCAI500_AGENT_ATTEMPTS_ATTEMPT_PLAN_H_

#include <string>
#include <vector>

#include "agent/system/process.h"

namespace hpcai500::agent {

// One rank to start.
struct RankPlan {
  int rank = 0;
  int local_rank = 0;
  LaunchSpec launch;
  std::string events_path;
  std::string pid_path;
  std::string acked_path;
  std::string exit_path;
  std::string done_path;
};

struct AttemptPlan {
  std::string dir;             // AttemptLayout::AttemptDir
  std::string checkpoint_dir;  // AttemptLayout::CheckpointDir
  // The earlier attempt's checkpoint to resume from (to be linked into
  // checkpoint_dir before the start); empty for a fresh start.
  std::string resume_source;
  std::vector<RankPlan> ranks;
};

// The state files of one rank inside an attempt folder (AttemptLayout's
// names), with no launch yet but the output files.
RankPlan RankPaths(const std::string& attempt_dir, int rank);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_ATTEMPT_PLAN_H_
