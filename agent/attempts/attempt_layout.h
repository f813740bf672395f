// AttemptLayout: the one owner of where an attempt's files live in the
// agent's workdir, both ways: it builds the paths the agent launches with and
// reads the folder and file names back when an agent finds the attempts of
// an earlier one (Supervisor::Reattach).
//
//   WORKDIR/runs/<run_id>/attempt-<n>/rank-<r>.<ext>
//
// ext: events (written by the worker), stdout, stderr, pid ("PID
// START_TIME"), acked (acknowledged seq), exit (the reported exit), done
// (everything delivered). Beside them, `lease`: the workers' lease
// (common/worker_lease.h), one per attempt. Checkpoints live apart, under the
// checkpoint root
// (--checkpoint-root, possibly shared by every node):
//
//   ROOT/run-<run_id>/attempt-<n>/checkpoint-epoch-NNNNNN.pt
//
// Builds and parses strings only; touches no disk.
//
// Thread-safe: immutable after construction; the static functions are pure.
#ifndef HPCAI500_AGENT_ATTEMPTS_ATTEMPT_LAYOUT_H_
#define HPCAI500_AGENT_ATTEMPTS_ATTEMPT_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The largest attempt number and world size an agent accepts, from an
// assignment or from a folder name.
inline constexpr int kMaxAttempt = 1000000;
inline constexpr int kMaxWorldSize = 65536;

// The state files of one rank.
enum class RankFile { kEvents, kStdout, kStderr, kPid, kAcked, kExit, kDone };

class AttemptLayout {
 public:
  // `workdir` is the agent's absolute working directory.
  explicit AttemptLayout(std::string workdir);

  // WORKDIR/runs: one folder per run id.
  std::string RunsDir() const;

  // WORKDIR/runs/<run_id>/attempt-<n>.
  std::string AttemptDir(const v1::AttemptKey& key) const;

  // ROOT/run-<run_id>/attempt-<n>: the attempt's --checkpoint-dir.
  static std::string CheckpointDir(std::string_view checkpoint_root,
                                   const v1::AttemptKey& key);

  // CheckpointDir(checkpoint_root, key)/CheckpointFileName(epoch): the file
  // the attempt's workers write for `epoch` (common/worker_args.h).
  static std::string CheckpointPath(std::string_view checkpoint_root,
                                    const v1::AttemptKey& key, int64_t epoch);

  // <attempt_dir>/lease: the lease of the attempt's workers.
  static std::string LeasePath(std::string_view attempt_dir);

  // <attempt_dir>/rank-<rank>.<ext of file>.
  static std::string RankPath(std::string_view attempt_dir, int rank,
                              RankFile file);

  // The run id a folder in RunsDir() is named for: plain digits (at most
  // 18, no sign); nullopt for any other name.
  static std::optional<int64_t> ParseRunDirName(std::string_view name);

  // n of an "attempt-<n>" folder, 0 <= n <= kMaxAttempt; nullopt otherwise.
  static std::optional<int> ParseAttemptDirName(std::string_view name);

  // r of a "rank-<r>.<ext of file>" file, 0 <= r < kMaxWorldSize; nullopt
  // otherwise (another file kind included).
  static std::optional<int> ParseRankFileName(std::string_view name,
                                              RankFile file);

 private:
  const std::string workdir_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_ATTEMPT_LAYOUT_H_
