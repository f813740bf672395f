// What the node's hpcai500-worker is, asked once when the agent starts:
// `hpcai500-worker --version` (worker/version.h) prints `key=value` lines
// (worker, libtorch, cuda, nccl), which go into the node's inventory
// versions and so into every attempt's provenance. Nothing here is fatal:
// a worker that cannot start, fails or hangs leaves the versions out, and
// the caller logs why.
//
// Thread-safe: free functions; AskWorkerVersion starts and waits for one
// process.
#ifndef HPCAI500_AGENT_NODE_WORKER_VERSION_H_
#define HPCAI500_AGENT_NODE_WORKER_VERSION_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/system/process.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// How long the agent waits for `hpcai500-worker --version` (it loads
// LibTorch, which takes a second or two on a busy node).
inline constexpr absl::Duration kWorkerVersionTimeout = absl::Seconds(10);

// Runs `worker_path --version` through `launcher` (borrowed for the call)
// with only PATH and LD_LIBRARY_PATH of this process's environment, its
// output in a temporary file (removed after), and waits at most `timeout`
// (then kills it). Returns the parsed lines (ParseWorkerVersionLines);
// FailedPrecondition naming the worker when it cannot start, exits non-zero
// or prints no `worker=` line; DeadlineExceeded when it ran past `timeout`.
absl::StatusOr<std::map<std::string, std::string>> AskWorkerVersion(
    const std::string& worker_path, absl::Duration timeout,
    ProcessLauncher& launcher);

// The `key=value` lines of `text` (keys and values trimmed; lines without
// '=' or with an empty key are skipped; a later key wins).
std::map<std::string, std::string> ParseWorkerVersionLines(
    absl::string_view text);

// Adds versions["worker"] (the worker's revision) and versions["libtorch"]
// (with "(CPU)", "(CUDA)" or "(CUDA, NCCL x.y.z)" after it) from `lines` to
// *inventory, then FitInventory. A key the worker did not print is left out.
void AddWorkerVersions(const std::map<std::string, std::string>& lines,
                       v1::Inventory* inventory);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_NODE_WORKER_VERSION_H_
