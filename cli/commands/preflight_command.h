// `hpcai500 preflight [NODE...] [--queue Q] [--json]`: asks the coordinator
// to measure nodes now (docs/design.md "Node health") and prints each
// node's figures, how long it took and whether the outlier rule flagged it
// (with the evidence), or the PreflightResponse as JSON.
//
// Thread-safe: pure functions and one request.
#ifndef HPCAI500_CLI_COMMANDS_PREFLIGHT_COMMAND_H_
#define HPCAI500_CLI_COMMANDS_PREFLIGHT_COMMAND_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/client/command_context.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// One row per node: node, device, GEMM GFLOP/s, memory GB/s, host to
// device GB/s, all-reduce bus GB/s ("-" where not measured), seconds and
// the verdict (ok, FLAGGED, drained, or the error), then a line of evidence
// under each flagged node.
std::string FormatPreflight(const v1::PreflightResponse& response);

// Runs the pre-flight of `nodes` (none: every node of `queue`, or with no
// queue every connected node). Returns kExitOk when every node measured
// without a flag, kExitFailed when one was flagged or failed (or the call
// failed: the client's error stream says why).
int RunPreflight(const CommandContext& context,
                 const std::vector<std::string>& nodes,
                 const std::string& queue, bool json);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_PREFLIGHT_COMMAND_H_
