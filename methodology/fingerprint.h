// A run's fingerprint (docs/design.md "Change points"): what it ran on and
// with, as one flat map of printable fields: each node's software and
// hardware as its agent reported it (driver, CUDA, NCCL, LibTorch, the
// worker's revision and digest, CPU and GPU models, interconnect, labels),
// the node names, every field of the spec but the seed, and the
// coordinator's version. And the attribution of a change point: the fields
// whose values differ between the runs before and after it, most
// consistent first.
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_FINGERPRINT_H_
#define HPCAI500_METHODOLOGY_FINGERPRINT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// One node of a run as the coordinator knows it: the inventory its agent
// reported when the attempt was placed, and its labels.
struct FingerprintNode {
  std::string name;
  v1::Inventory inventory;
  std::map<std::string, std::string> labels;
};

// The field holding the run's node names, sorted and comma-joined.
inline constexpr char kFingerprintNodesField[] = "nodes";

// The fingerprint of a run of `spec` on `nodes` (any order) under a
// coordinator of `coordinator_version`. Fields: "coordinator", "nodes",
// "cpu", "gpu" (device models with their counts, "none" without), "driver",
// "interconnect" ("nvlink N links" or "none"), each inventory version by its
// key ("libtorch", "nccl", "cuda", "worker", "worker_digest", "kernel",
// "os", ...), "label.KEY" for each label, and "spec.FIELD" for each spec
// field set but the seed. A value the nodes disagree on lists each
// distinct value, sorted, joined by " | ".
v1::Fingerprint MakeFingerprint(const v1::RunSpec& spec,
                                const std::vector<FingerprintNode>& nodes,
                                absl::string_view coordinator_version);

// A fingerprint field whose usual value differs across a change: the most
// common value among the runs before and among the runs after ("" when
// the field was absent), and the share of runs on each side that held it.
struct FieldShift {
  std::string field;
  std::string before;
  std::string after;
  double before_share = 0;  // in [0, 1]
  double after_share = 0;
};

// What differs between the fingerprints `before` and `after` (the runs of
// the segments beside a change; runs without a fingerprint left out by the
// caller): each field whose most common value differs, ordered by
// before_share x after_share (the most consistent first), then by name.
std::vector<FieldShift> AttributeChange(
    const std::vector<v1::Fingerprint>& before,
    const std::vector<v1::Fingerprint>& after);

// The attribution in words: the first `max_shifts` shifts as "FIELD BEFORE
// -> AFTER in every run after" (or "in N% of runs after"), joined by "; ",
// then "; node set unchanged" when the node names did not shift, or "no
// fingerprint field changed" for none. "no fingerprints to compare" when
// either side had none (`compared` false).
std::string AttributionText(const std::vector<FieldShift>& shifts,
                            bool compared, int max_shifts = 3);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_FINGERPRINT_H_
