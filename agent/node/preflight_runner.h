// Runs the coordinator's pre-flight orders on this node (docs/design.md
// "Node health"): `hpcai500-worker preflight` (worker/preflight.h) with the
// order's precision and budget, the node's device (cuda when it has GPUs),
// the workers' allowlisted environment, its output in a file of the
// workdir; the one hpcai500_preflight line it prints becomes a
// PreflightDone. Bounded: the worker is killed at the order's timeout and
// the answer says so. One order at a time; a second while one runs is
// answered at once with an error.
//
// Not thread-safe: the agent's loop drives it (Start from a message, Poll
// at every turn); it never blocks.
#ifndef HPCAI500_AGENT_NODE_PREFLIGHT_RUNNER_H_
#define HPCAI500_AGENT_NODE_PREFLIGHT_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/system/process.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The PreflightDone of the worker's output `text`: the figures of its last
// hpcai500_preflight line (each a finite number >= 0; others skipped),
// its device and seconds. InvalidArgument when no such line is there.
absl::StatusOr<v1::PreflightDone> ParsePreflightOutput(absl::string_view text);

class PreflightRunner {
 public:
  // `launcher` is borrowed and must outlive this. `env` is the worker's
  // whole environment; `output_dir` an existing folder for its output.
  PreflightRunner(std::string worker_path, std::vector<std::string> env,
                  bool cuda, std::string output_dir, ProcessLauncher* launcher);
  // Kills a worker still running.
  ~PreflightRunner();
  PreflightRunner(const PreflightRunner&) = delete;
  PreflightRunner& operator=(const PreflightRunner&) = delete;

  // Starts `order`; returns the answer at once when it cannot (one runs,
  // a bad order, the worker cannot start), else nothing yet.
  std::optional<v1::AgentMessage> Start(const v1::PreflightOrder& order);

  // The answer of the running order once its worker ended or ran past the
  // order's timeout (killed); nothing while it runs or when none does.
  std::optional<v1::AgentMessage> Poll();

 private:
  struct Running {
    int64_t id = 0;
    pid_t pid = 0;
    absl::Time started;
    absl::Time deadline;
    std::string output;
  };
  // The answer to order `id` with `error`.
  static v1::AgentMessage Failed(int64_t id, const std::string& error);

  // Constant after construction.
  const std::string worker_path_;
  const std::vector<std::string> env_;
  const bool cuda_;
  const std::string output_dir_;
  ProcessLauncher* const launcher_;

  std::optional<Running> running_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_NODE_PREFLIGHT_RUNNER_H_
