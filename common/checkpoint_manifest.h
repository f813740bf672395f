// The manifest a worker writes beside each complete checkpoint, and the
// digest that ties it to the checkpoint's files. It lets the coordinator
// resume from a checkpoint whose events never reached it (the node died
// between writing the checkpoint and the agent delivering its event): the
// agent that starts the next attempt finds the manifest on the shared
// checkpoint root, digests the files it names and reports both; the
// coordinator checks them against what it knows and stores the manifest's
// event lines as the earlier attempt's (docs/design.md "Nothing lost").
//
//   <dir>/checkpoint-epoch-NNNNNN.manifest
//
//   hpcai500 checkpoint manifest 1
//   run_id 12
//   attempt 1
//   epoch 3
//   file <sha256 hex> checkpoint-epoch-000003.pt
//   file <sha256 hex> checkpoint-epoch-000003.rank-0.pt
//   event {"key": "epoch_start", ...}
//   event {"key": "hpcai500_checkpoint", ...}
//
// Written atomically after the checkpoint's files and its event line, so a
// manifest present means a whole checkpoint. Its events are rank 0's lines
// after its previous checkpoint event (or from its first line) through this
// checkpoint's event, in seq order.
//
// Std-only plus OpenSSL's SHA-256: the worker, the agent and the coordinator
// link it. Thread-safe: functions only.
#ifndef HPCAI500_COMMON_CHECKPOINT_MANIFEST_H_
#define HPCAI500_COMMON_CHECKPOINT_MANIFEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hpcai500 {

// The largest manifest read or accepted (an epoch's lines of rank 0 are a
// few kB).
inline constexpr size_t kMaxManifestBytes = 4 * 1024 * 1024;

struct CheckpointManifest {
  struct File {
    std::string sha256;  // 64 lowercase hex digits
    std::string name;    // a plain file name in the manifest's folder
  };
  int64_t run_id = 0;
  int64_t attempt = 0;
  int64_t epoch = 0;
  std::vector<File> files;
  std::vector<std::string> events;  // whole lines without '\n'
};

// "checkpoint-epoch-NNNNNN.manifest" (the epoch as in CheckpointFileName).
std::string CheckpointManifestFileName(int64_t epoch);

// The epoch a manifest file name stands for; -1 when `name` is not one.
int64_t EpochOfManifestName(std::string_view name);

// The manifest as its file holds it.
std::string FormatCheckpointManifest(const CheckpointManifest& manifest);

// Parses a manifest's text. False with *error saying what is wrong: over
// kMaxManifestBytes, a bad header or line, a missing or non-positive
// run_id / attempt / epoch, no file, a file name with '/' or a bad digest.
bool ParseCheckpointManifest(std::string_view text, CheckpointManifest* out,
                             std::string* error);

// The SHA-256 of the file at `path` as 64 lowercase hex digits; false with
// *error naming the path when it cannot be read.
bool Sha256OfFile(const std::string& path, std::string* hex,
                  std::string* error);

// One digest for a checkpoint: the SHA-256 of "<sha256> <name>\n" of each
// file, in the order given.
std::string CheckpointDigest(
    const std::vector<CheckpointManifest::File>& files);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_CHECKPOINT_MANIFEST_H_
