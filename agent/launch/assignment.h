// Checking an Assignment from the coordinator and turning it into the exact
// processes to start. Nothing in an assignment is trusted: names must match
// [a-z0-9_]+, numbers must be in range, ranks within the world size, and no
// field may carry path characters. The worker's argv is built here from the
// checked fields; no command string ever comes from the remote side.
//
// Thread-safe: free functions.
#ifndef HPCAI500_AGENT_LAUNCH_ASSIGNMENT_H_
#define HPCAI500_AGENT_LAUNCH_ASSIGNMENT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/attempts/attempt_plan.h"
#include "agent/system/process.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// What the node contributes to every launch.
struct NodeContext {
  std::string workdir;      // absolute
  std::string worker_path;  // the hpcai500-worker executable
  int cpus = 1;
  std::vector<std::string> base_env;  // "K=V", inherited by every worker
  // Dataset name -> this node's absolute directory for it (--data).
  std::map<std::string, std::string> data_dirs;
  // Where attempts keep their checkpoints (--checkpoint-root); absolute.
  std::string checkpoint_root;
  // The agent's own pid, named to every worker as the holder of its lease
  // (kLeaseHolderEnvVar, common/lease_holder.h); 0: none named.
  pid_t lease_holder_pid = 0;
};

// Whether a node's --data location applies to config: it reads real data
// from its data_dir. Synthetic data and generated data (written on first use
// into the registry's own data_dir) are never mapped.
bool ReadsNodeData(const ConfigInfo& config);

// InvalidArgument "assignment: <field>: <reason>": how every check of an
// assignment says what it refused (here and in the launchers).
absl::Status InvalidAssignment(absl::string_view field,
                               absl::string_view reason);

// Checks the attempt key. InvalidArgument naming the field.
absl::Status ValidateAttemptKey(const v1::AttemptKey& key);

// Checks a PHASE_START assignment completely. InvalidArgument naming the
// field and the reason, e.g. "assignment: ranks[1]: 7 is outside world size 2".
// A resume names an earlier attempt (1 .. key.attempt - 1) and an epoch of
// the spec (1 .. spec.epochs); resume_from_epoch 0 is a fresh start, and its
// resume_from_attempt may only be 0 or an earlier attempt.
absl::Status ValidateStartAssignment(const v1::Assignment& assignment);

// Validates the assignment and builds one launch per local rank: argv (the
// worker path, then WorkerArgs::ToArgv of the spec, the rank's events file,
// the node's threads per rank, the attempt's --checkpoint-dir, with
// --resume when the assignment resumes, and its --lease-file), environment
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// CUDA_VISIBLE_DEVICES for cuda) and output files. When the spec's built-in
// config reads node data (ReadsNodeData) and node.data_dirs maps its dataset,
// argv has --data DIR. A resume's resume_source is the earlier attempt's
// checkpoint file under node.checkpoint_root. Creates nothing on disk.
absl::StatusOr<AttemptPlan> PlanAttempt(const v1::Assignment& assignment,
                                        const NodeContext& node);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_LAUNCH_ASSIGNMENT_H_
