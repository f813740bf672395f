// `hpcai500 check NODE`: a node health check in the manner of Slurm's
// HealthCheckProgram or a ReFrame sanity check. It submits a noop run
// (methodology/registry.h kNoopWorkload) pinned to the node through the
// scheduler's constraints (the implicit label node=NAME, methodology/spec.h
// kNodeLabel), waits for it, and times each phase. The pieces here are pure;
// CheckCommand (cli/commands/check_command.h) does the calls.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_COMMANDS_CHECK_H_
#define HPCAI500_CLI_COMMANDS_CHECK_H_

#include <string>

#include "absl/time/time.h"
#include "common/vocabulary.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

struct CheckOptions {
  absl::Duration timeout = absl::Minutes(2);  // --timeout: submit to end
  bool json = false;                          // --json: one JSON object
};

// Why node `name` cannot be checked, from the coordinator's node list: ""
// when it takes runs (idle or busy), else "unknown node 'x' (registered: a,
// b)", "node x is down: <reason>", "node x is drained: <reason>" or "node x
// is draining: <reason>".
std::string NodeUnavailable(const v1::ListNodesResponse& nodes,
                            const std::string& name);

// How a check runs on `node`: one rank per slot (at least one), so every
// rank of the node joins the rendezvous, on CUDA (NCCL) when the node has a
// GPU for each rank, else on the CPU (Gloo).
struct CheckLayout {
  int ranks = 1;
  Device device = Device::kCpu;
};
CheckLayout CheckLayoutOf(const v1::Node& node);

// The noop spec pinned to `node` (constraints node=NAME, no retry) in
// CheckLayoutOf(node).
std::string CheckSpecYaml(const v1::Node& node);

// What one check saw. Phase durations are seconds, negative when the check
// never got there.
struct CheckReport {
  std::string node;
  bool healthy = false;
  std::string problem;  // why it is not healthy
  int64_t run_id = 0;   // 0: no run was submitted
  std::string state;    // the run's last state ("" without a run)
  std::string device;   // cpu | cuda
  int ranks = 0;
  // Submitted until placed (the coordinator's clock).
  double queued_s = -1;
  // Placed until the workers were launched, between the watch reports that
  // showed each (0 when one report showed both).
  double started_s = -1;
  // The noop's epoch on the worker's clock: joining the process group and
  // one all-reduce (the slowest rank).
  double epoch_s = -1;
  // Launched until every rank exited and the run was scored (the
  // coordinator's placed-to-ended, less started).
  double exited_s = -1;
  double total_s = 0;
};

// One line per phase reached, then "check NODE: healthy (T s)" or "check
// NODE: UNHEALTHY: <problem>".
std::string CheckLines(const CheckReport& report);

// The report as one JSON object: node, healthy, problem, run_id, state,
// device, ranks, phases {queued_s, started_s, rendezvous_epoch_s,
// exited_s} (null for a phase not reached), total_s.
std::string CheckJson(const CheckReport& report);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_CHECK_H_
