// `hpcai500 sweep SPEC --nodes 1,2,4,8 ...`: a scaling study in one command.
// The cartesian product of the axes given (nodes, ranks per node, precision,
// compression) over one spec, each point a spec of its own, submitted as one
// suite through the submit path (RunWatcher::Submit) and marked with the
// sweep's id and scaling mode (RunSpec.sweep, RunSpec.scaling) so that the
// scaling page groups the runs.
//
// The batch (RunSpec.batch_size is per rank): weak scaling keeps the per-rank
// batch, strong scaling keeps the global batch (batch_size x nodes x
// ranks_per_node of the spec as written) and divides it over each point's
// ranks. At level hardware each precision takes its reference batch
// (ReferenceBatchSize), the only one the level allows.
//
// Thread-safe: free functions; SubmitSweep drives one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_SWEEP_H_
#define HPCAI500_CLI_COMMANDS_SWEEP_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/client/command_context.h"
#include "common/vocabulary.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The axes of a sweep; an empty axis takes the spec's own value.
struct SweepOptions {
  std::vector<int32_t> nodes;
  std::vector<int32_t> ranks_per_node;
  std::vector<std::string> precisions;
  std::vector<std::string> compressions;
  Scaling scaling = Scaling::kWeak;
  bool dry_run = false;  // list the points, submit nothing
};

// The flags' text into `options`: each axis a comma list ("1,2,4,8",
// "fp32,bf16") of distinct values, counts within the spec's limits and
// names from the vocabulary; an empty text leaves the axis empty.
// InvalidArgument naming the flag and the value, e.g. "--nodes: '0' is not
// a count between 1 and 4096".
absl::Status ParseSweepAxes(absl::string_view nodes,
                            absl::string_view ranks_per_node,
                            absl::string_view precisions,
                            absl::string_view compressions,
                            absl::string_view scaling, SweepOptions& options);

// The points of the sweep over `base` (a parsed spec), precision, then
// compression, then ranks per node, then nodes (fewest first), each named
// "<name>-<N>n<R>r-<precision>-<compression>", with `sweep_id`, the scaling
// mode and its batch, and checked as the coordinator checks a spec
// (ValidateRunSpec). InvalidArgument when the product is over a suite's
// kMaxSuiteSpecs, when strong scaling's global batch does not divide over a
// point's ranks, or naming the point and the field a point breaks.
absl::StatusOr<std::vector<v1::RunSpec>> ExpandSweep(
    const v1::RunSpec& base, const SweepOptions& options,
    const std::string& sweep_id, const Registry& registry);

// The points as one suite file (methodology/suite.h form (a), `suite:` the
// sweep's id), the text `hpcai500 submit` would send.
std::string SweepSuiteYaml(const std::string& sweep_id,
                           const std::vector<v1::RunSpec>& points);

// A new sweep id: "<name>-<YYYYMMDD-HHMMSS>-<4 hex digits>" at `now`, UTC,
// the hex digits random so that two sweeps in one second differ.
std::string NewSweepId(absl::string_view name, absl::Time now);

// The --dry-run listing: a line naming the sweep, its size and mode, then a
// table of the points with their devices and per-rank and global batch.
std::string FormatSweepPlan(const std::string& sweep_id, Scaling scaling,
                            const std::vector<v1::RunSpec>& points);

// The sweep command: reads `spec_yaml` (one spec; read from `spec_source`,
// named in messages), expands it, and prints the plan with
// options.dry_run, else submits the points as one suite (RunWatcher::Submit
// with `wait` and `request_id`) and prints the runs' ids. kExitRefused for
// a spec or sweep refused (here or by the coordinator), else Submit's code.
int SubmitSweep(const CommandContext& context, const std::string& spec_source,
                const std::string& spec_yaml, const SweepOptions& options,
                bool wait, const std::string& request_id);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_SWEEP_H_
