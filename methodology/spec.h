// Run specs: parsing the YAML a user submits (its keys are the rows of
// methodology/spec_fields.h), checking it against the registry and the level's
// rules, and filling in defaults.
//
// Thread-safe: free functions over immutable inputs.
#ifndef HPCAI500_METHODOLOGY_SPEC_H_
#define HPCAI500_METHODOLOGY_SPEC_H_

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/vocabulary.h"
#include "methodology/registry.h"
#include "methodology/spec_fields.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The label every node carries implicitly: node=<its name>, set by the
// coordinator over whatever the agent says. A spec's constraints may name it
// to pin a run to one node (`hpcai500 check NODE`, Slurm's --nodelist).
inline constexpr char kNodeLabel[] = "node";

// The label a pilot agent inside a Slurm allocation carries with Slurm's name
// for its node (deploy/slurm/agents.sbatch): `launcher: srun` names the
// node by it, since the agent's own name is NODE-JOBID.
inline constexpr char kSlurmNodeLabel[] = "slurm_node";

// Parses and validates a run spec. Returns the spec with defaults filled in
// (epochs from the config, repetitions 1, ranked computed), or
// InvalidArgument whose message names the field and the reason, e.g.
// "field 'batch_size': must be between 1 and 65536, got 0". Unknown keys,
// wrong types and out-of-range values are refused, never ignored.
absl::StatusOr<v1::RunSpec> ParseRunSpec(std::string_view yaml,
                                         const Registry& registry);

// Checks an already-built spec (the same rules as ParseRunSpec, without
// defaults). Used for specs that did not come from YAML.
absl::Status ValidateRunSpec(const v1::RunSpec& spec, const Registry& registry);

// Field checks shared by every place that checks what a remote side sends
// (run specs here, assignments in the agent; CheckInRange is beside the spec
// fields, methodology/spec_fields.h). Each returns OkStatus or InvalidArgument
// "<what>: <reason>", `what` naming the field the way the caller's messages
// do ("field 'device'", "assignment: device"):
//   "<what>: must be one of cpu, cuda; got 'tpu'"
absl::Status CheckOneOf(absl::string_view what, absl::string_view value,
                        absl::Span<const absl::string_view> allowed);

// AllNames<Enum>() as absl::string_view, for abseil's string functions
// (absl::StrJoin), which take no std::string_view in every build.
template <typename Enum>
constexpr auto AbslNames() {
  constexpr const auto& names = AllNames<Enum>();
  std::array<absl::string_view, names.size()> out{};
  for (size_t i = 0; i < names.size(); ++i) {
    out[i] = absl::string_view(names[i].data(), names[i].size());
  }
  return out;
}

// The names of Level (common/vocabulary.h), under the name the
// leaderboard's level filter reads them by.
inline constexpr std::array<absl::string_view, 3> kLevels = AbslNames<Level>();

// The InvalidArgument of CheckOneOf: "<what>: must be one of <names>; got
// '<value>'" (value cut at 80 characters).
absl::Status NotOneOfError(absl::string_view what, absl::string_view value,
                           absl::string_view names);

// CheckOneOf against the names of a vocabulary enum (Device, Precision,
// Compression in common/vocabulary.h), the one list specs and assignments
// are checked against.
template <typename Enum>
absl::Status CheckOneOf(absl::string_view what, absl::string_view value) {
  if (Parse<Enum>(std::string_view(value.data(), value.size()))) {
    return absl::OkStatus();
  }
  return NotOneOfError(what, value, JoinNames<Enum>(", "));
}

// The launcher (common/vocabulary.h) a spec names; empty (a spec stored
// before the field) is kAgent. InvalidArgument "<what>: must be one of agent,
// mpirun, srun; got '...'" otherwise.
absl::StatusOr<Launcher> ParseLauncher(absl::string_view what,
                                       absl::string_view name);

// The names of the fast paths (common/fast_paths.h) `spec` turns on, in
// kFastPaths' order ("fused_bn", "cuda_graph"); empty when none.
std::vector<std::string> FastPathsOn(const v1::RunSpec& spec);

// The spec as YAML, in the key order users write (for `show` and storage):
// each field as its row of SpecFields() (methodology/spec_fields.h) writes it.
std::string RunSpecToYaml(const v1::RunSpec& spec);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SPEC_H_
