// The checkpoint folders of attempts (AttemptLayout::CheckpointDir): what
// the Supervisor does to them around an attempt, apart from starting and
// watching its workers. A resumed attempt gets the earlier attempt's
// checkpoint linked in before its workers start; a run whose attempt
// succeeded loses them all, as no attempt of it resumes again. Both only
// log what fails: a worker starts without the checkpoint, and a folder not
// removed is left for the operator.
//
// Thread-safe: free functions over the file system.
#ifndef HPCAI500_AGENT_ATTEMPT_CHECKPOINTS_H_
#define HPCAI500_AGENT_ATTEMPT_CHECKPOINTS_H_

#include <string>

#include "agent/assignment.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// Links plan's resume_source into its checkpoint folder (or copies it where
// a link cannot be made); a missing or unlinkable source is logged and the
// workers start without it. Nothing for a fresh start.
void LinkResumeSource(const v1::AttemptKey& key, const AttemptPlan& plan);

// Removes the checkpoints of a run whose attempt succeeded (rank 0 trained
// it to the end): the run's folder with every attempt's. `attempt_dir` is
// the attempt's checkpoint folder inside the run's.
void RemoveRunCheckpoints(const v1::AttemptKey& key,
                          const std::string& attempt_dir);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPT_CHECKPOINTS_H_
