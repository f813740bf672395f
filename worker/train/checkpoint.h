// Epoch-end checkpoints of a training run and resuming from them.
//
// One file per completed epoch, `<dir>/checkpoint-epoch-NNNNNN.pt` (a
// torch::serialize archive), holding the model's parameters and buffers, the
// optimizer's state (SGD momentum buffers), the loss scaler, the epoch, the
// torch CPU generator's state and a fingerprint of the run's shape. The data
// order needs no state of its own: epoch e's shards are drawn from seed + e,
// so the epoch number is the sampler position.
//
// Who writes: rank 0 alone, and every rank resumes from rank 0's file. That
// is complete because the ranks hold the same state at an epoch's end: the
// parameters, buffers and momentum agree after every all-reduced step and
// the buffer averaging of evaluation, and every rank seeds the generator
// alike and draws from it in lockstep (no per-rank random draws). A run that
// spans nodes must give --checkpoint-dir a folder every node shares.
//
// What is not the same on every rank has a file per rank beside it: under
// PowerSGD each rank's error feedback (with the warm-started Q and the step
// count), `<dir>/checkpoint-epoch-NNNNNN.rank-R.pt`. Each rank writes its
// own (no rank gathers the others' model-sized residuals), all before rank 0
// writes the epoch's main file, so a main file's presence means its parts
// are there too. docs/design.md "Worker" says why.
//
// Files are written atomically (temporary file in the same folder, fsync,
// rename, fsync of the folder): a name that matches the pattern always holds
// a whole checkpoint. The newest `keep` checkpoints are kept.
//
// Thread-safety: functions only; a model or optimizer passed in is used by
// the calling thread alone for the call's duration.
#ifndef HPCAI500_WORKER_TRAIN_CHECKPOINT_H_
#define HPCAI500_WORKER_TRAIN_CHECKPOINT_H_

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "worker/distributed/distributed.h"
#include "worker/train/precision.h"

namespace hpcai500::worker {

// The state a checkpoint saves and restores; the pointers are borrowed for
// the duration of one SaveCheckpoint or LoadCheckpoint call.
struct TrainingState {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  LossScaler* scaler = nullptr;
  int64_t epoch = 0;  // completed epochs
  // What must match for a resume to continue the same run (config, world
  // size, batch, steps per epoch, seed, precision), as one string.
  std::string fingerprint;
};

// Receives the next `size` bytes of a file being written.
using ByteSink = std::function<void(const void* data, size_t size)>;

// Writes `path` atomically: `produce` writes the content to a temporary file
// in the same folder, which is fsynced and renamed over `path`. If `produce`
// throws or any I/O fails, `path` is left as it was (absent or the old
// content), the temporary file is removed, and std::runtime_error naming
// `path` is thrown.
void WriteFileAtomically(const std::string& path,
                         const std::function<void(const ByteSink&)>& produce);

// `<dir>/checkpoint-epoch-NNNNNN.pt` for `epoch`.
std::string CheckpointPath(const std::string& dir, int64_t epoch);

// Saves `state` as `state.epoch`'s checkpoint in `dir` (created if missing)
// and removes all but the newest `keep` (>= 1) checkpoints there. Returns the
// file's path. Throws std::runtime_error naming the file on failure.
std::string SaveCheckpoint(const std::string& dir, const TrainingState& state,
                           int keep = 2);

// The path of the checkpoint with the highest epoch in `dir`, or nullopt when
// there is none (or no such folder). Temporary files never count.
std::optional<std::string> NewestCheckpoint(const std::string& dir);

// `<dir>/checkpoint-epoch-NNNNNN.rank-R.pt`: rank `rank`'s part of `epoch`'s
// checkpoint.
std::string CheckpointPartPath(const std::string& dir, int64_t epoch, int rank);

// Saves `state` as rank `rank`'s PowerSGD part of `epoch`'s checkpoint in
// `dir` (created if missing) and removes this rank's parts of all but the
// newest `keep` (>= 1) epochs. Returns the file's path. Throws
// std::runtime_error naming the file on failure.
std::string SavePowerSgdPart(const std::string& dir, int64_t epoch, int rank,
                             const PowerSgdState& state, int keep = 2);

// Moves `optimizer`'s SGD momentum buffers to their parameters' devices
// (LoadCheckpoint reads them onto the CPU). Other state is left alone.
void MoveStateToParameters(torch::optim::Optimizer& optimizer);

// The PowerSGD state saved at `path` (CPU tensors). Throws
// std::runtime_error naming `path` when it is missing ("written by a run
// without PowerSGD?"), unreadable or corrupt.
PowerSgdState LoadPowerSgdPart(const std::string& path);

// Writes the manifest of `epoch`'s checkpoint in `dir` atomically
// (common/checkpoint_manifest.h): the run and attempt, the SHA-256 of each
// of `files` (names in `dir`, read back from disk) and rank 0's `events`;
// removes all but the newest `keep` manifests. Call it after the files and
// the checkpoint's event line are written. Throws std::runtime_error naming
// the manifest when a file cannot be read or the write fails.
void WriteCheckpointManifest(const std::string& dir, int64_t run_id,
                             int64_t attempt, int64_t epoch,
                             const std::vector<std::string>& files,
                             std::vector<std::string> events, int keep = 2);

// Restores the model, optimizer, scaler and torch CPU generator from `path`
// and sets state->epoch to the epoch it completed. state->fingerprint must
// equal the saved one. Throws std::runtime_error naming `path` when the file
// cannot be read, is truncated or corrupt, lacks an entry, or belongs to a
// different run shape; the objects may then be partly restored.
void LoadCheckpoint(const std::string& path, TrainingState* state);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_CHECKPOINT_H_
