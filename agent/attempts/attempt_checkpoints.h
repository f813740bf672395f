// The checkpoint folders of attempts (AttemptLayout::CheckpointDir): what
// the Supervisor does to them around an attempt, apart from starting and
// watching its workers. Before a new attempt is started, rank 0's agent
// reports the complete checkpoints (with their manifests) an earlier
// attempt left that may be newer than the coordinator knows; a resumed
// attempt gets the earlier attempt's checkpoint (its main file and its
// ranks' parts) linked in before its workers start; a run whose attempt
// succeeded loses them all, as no attempt of it resumes again. All only
// log what fails: a worker starts without the checkpoint, and a folder not
// removed is left for the operator.
//
// Thread-safe: free functions over the file system.
#ifndef HPCAI500_AGENT_ATTEMPTS_ATTEMPT_CHECKPOINTS_H_
#define HPCAI500_AGENT_ATTEMPTS_ATTEMPT_CHECKPOINTS_H_

#include <string>

#include "agent/attempts/attempt_plan.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// Adds to `reply` each complete checkpoint newer than `a`'s resume point in
// the folder of a.probe_checkpoints_attempt under `checkpoint_root`, oldest
// first: its manifest's text and the digest of the files it names, read
// now (or why they could not be). Nothing when `a` asks for no probe or
// names an attempt that is not an earlier one.
void AddFoundCheckpoints(const std::string& checkpoint_root,
                         const v1::Assignment& a, v1::PortReserved* reply);

// Links plan's resume_source and its ranks' parts
// (checkpoint-epoch-NNNNNN.rank-R.pt) into its checkpoint folder (or copies
// them where a link cannot be made); a missing or unlinkable source is logged
// and the workers start without it. Nothing for a fresh start.
void LinkResumeSource(const v1::AttemptKey& key, const AttemptPlan& plan);

// Removes the checkpoints of a run whose attempt succeeded (rank 0 trained
// it to the end): the run's folder with every attempt's. `attempt_dir` is
// the attempt's checkpoint folder inside the run's.
void RemoveRunCheckpoints(const v1::AttemptKey& key,
                          const std::string& attempt_dir);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_ATTEMPT_CHECKPOINTS_H_
