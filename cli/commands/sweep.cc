// `hpcai500 sweep`: the axes parsed, the points expanded and submitted as
// one suite (cli/commands/sweep.h).
#include "cli/commands/sweep.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/client/exit_codes.h"
#include "cli/commands/watch.h"
#include "cli/text/format.h"
#include "common/limits.h"
#include "common/request_id.h"
#include "common/status_macros.h"
#include "methodology/spec.h"
#include "methodology/suite.h"

namespace hpcai500 {
namespace {

// The items of a comma list, each given once; InvalidArgument naming `flag`
// for an empty item or one given twice.
absl::StatusOr<std::vector<std::string>> AxisItems(absl::string_view flag,
                                                   absl::string_view text) {
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    if (item.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": an empty value in '", text, "' (a list like 1,2,4)"));
    }
    if (std::find(items.begin(), items.end(), item) != items.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", item, "' given twice"));
    }
    items.emplace_back(item);
  }
  return items;
}

absl::StatusOr<std::vector<int32_t>> CountAxis(absl::string_view flag,
                                               absl::string_view text,
                                               int32_t max) {
  std::vector<int32_t> counts;
  if (text.empty()) return counts;
  ASSIGN_OR_RETURN(std::vector<std::string> items, AxisItems(flag, text));
  for (const std::string& item : items) {
    int32_t count = 0;
    if (!absl::SimpleAtoi(item, &count) || count < 1 || count > max ||
        item.front() == '+') {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", item, "' is not a count between 1 and ", max));
    }
    counts.push_back(count);
  }
  return counts;
}

template <typename Enum>
absl::StatusOr<std::vector<std::string>> NameAxis(absl::string_view flag,
                                                  absl::string_view text) {
  if (text.empty()) return std::vector<std::string>();
  ASSIGN_OR_RETURN(std::vector<std::string> items, AxisItems(flag, text));
  for (const std::string& item : items) {
    RETURN_IF_ERROR(CheckOneOf<Enum>(flag, item));
  }
  return items;
}

// An empty axis is the spec's own value.
template <typename T>
std::vector<T> OrOwn(const std::vector<T>& axis, T own) {
  return axis.empty() ? std::vector<T>{own} : axis;
}

// The per-rank batch a spec of `precision` starts from: at level hardware
// the reference batch of that precision (the only one the level allows),
// else the batch the spec gives.
int32_t BaseBatch(const v1::RunSpec& base, const ConfigInfo& config,
                  const std::string& precision) {
  if (base.level() != Name(Level::kHardware)) return base.batch_size();
  return ReferenceBatchSize(config, *Parse<Precision>(precision));
}

int64_t Devices(const v1::RunSpec& spec) {
  return int64_t{spec.nodes()} * spec.ranks_per_node();
}

// The per-rank batch of `point` (nodes and ranks set): `base_batch` for weak
// scaling; for strong, the global batch base_batch x the spec's own devices
// over the point's, InvalidArgument when it does not divide.
absl::StatusOr<int32_t> PointBatch(const v1::RunSpec& base,
                                   const v1::RunSpec& point, Scaling scaling,
                                   int32_t base_batch) {
  if (scaling == Scaling::kWeak) return base_batch;
  const int64_t global = int64_t{base_batch} * Devices(base);
  if (global % Devices(point) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scaling strong: the global batch of ", global, " (batch_size ",
        base_batch, " x ", base.nodes(), " nodes x ", base.ranks_per_node(),
        " ranks per node) does not divide over ", Devices(point), " ranks (",
        point.nodes(), " nodes x ", point.ranks_per_node(), ")"));
  }
  const int64_t batch = global / Devices(point);
  if (batch > kMaxBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scaling strong: the global batch of ", global, " over ",
                     Devices(point), " ranks is ", batch,
                     " per rank, over the limit of ", kMaxBatchSize));
  }
  return static_cast<int32_t>(batch);
}

// Completes `point` (`base` with one point's nodes, ranks per node,
// precision and compression set): its name, the sweep's id and scaling mode,
// and its batch; then checks it as the coordinator checks a spec.
// InvalidArgument naming the point and what it breaks.
absl::Status CompletePoint(const v1::RunSpec& base, const std::string& sweep_id,
                           Scaling scaling, const ConfigInfo& config,
                           const Registry& registry, v1::RunSpec& point) {
  point.set_sweep(sweep_id);
  point.set_scaling(std::string(Name(scaling)));
  point.set_name(absl::StrCat(base.name(), "-", point.nodes(), "n",
                              point.ranks_per_node(), "r-", point.precision(),
                              "-", point.compression()));
  ASSIGN_OR_RETURN(const int32_t batch,
                   PointBatch(base, point, scaling,
                              BaseBatch(base, config, point.precision())));
  point.set_batch_size(batch);
  if (absl::Status valid = ValidateRunSpec(point, registry); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep point ", point.name(), ": ", valid.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSweepAxes(absl::string_view nodes,
                            absl::string_view ranks_per_node,
                            absl::string_view precisions,
                            absl::string_view compressions,
                            absl::string_view scaling, SweepOptions& options) {
  ASSIGN_OR_RETURN(options.nodes, CountAxis("--nodes", nodes, kMaxNodes));
  ASSIGN_OR_RETURN(
      options.ranks_per_node,
      CountAxis("--ranks-per-node", ranks_per_node, kMaxRanksPerNode));
  ASSIGN_OR_RETURN(options.precisions,
                   NameAxis<Precision>("--precision", precisions));
  ASSIGN_OR_RETURN(options.compressions,
                   NameAxis<Compression>("--compression", compressions));
  if (!scaling.empty()) {
    RETURN_IF_ERROR(CheckOneOf<Scaling>("--scaling", scaling));
    options.scaling =
        *Parse<Scaling>(std::string_view(scaling.data(), scaling.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::RunSpec>> ExpandSweep(
    const v1::RunSpec& base, const SweepOptions& options,
    const std::string& sweep_id, const Registry& registry) {
  const ConfigInfo* config =
      registry.FindConfig(base.workload(), base.config());
  if (config == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown config '", base.config(), "' of ", base.workload()));
  }
  const auto nodes = OrOwn(options.nodes, base.nodes());
  const auto ranks = OrOwn(options.ranks_per_node, base.ranks_per_node());
  const auto precisions = OrOwn(options.precisions, base.precision());
  const auto compressions = OrOwn(options.compressions, base.compression());
  const size_t count =
      nodes.size() * ranks.size() * precisions.size() * compressions.size();
  if (count > static_cast<size_t>(kMaxSuiteSpecs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a sweep of ", count, " runs; a suite holds at most ", kMaxSuiteSpecs));
  }
  std::vector<v1::RunSpec> points;
  for (const std::string& precision : precisions) {
    for (const std::string& compression : compressions) {
      for (int32_t rank_count : ranks) {
        for (int32_t node_count : nodes) {
          v1::RunSpec point = base;
          point.set_nodes(node_count);
          point.set_ranks_per_node(rank_count);
          point.set_precision(precision);
          point.set_compression(compression);
          RETURN_IF_ERROR(CompletePoint(base, sweep_id, options.scaling,
                                        *config, registry, point));
          points.push_back(std::move(point));
        }
      }
    }
  }
  return points;
}

std::string SweepSuiteYaml(const std::string& sweep_id,
                           const std::vector<v1::RunSpec>& points) {
  std::string text = absl::StrCat("suite: ", sweep_id, "\nspecs:\n");
  for (const v1::RunSpec& point : points) {
    // RunSpecToYaml writes a block mapping: indented, it is a list item.
    const std::string yaml = RunSpecToYaml(point);
    std::string prefix = "  - ";
    for (absl::string_view line :
         absl::StrSplit(yaml, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&text, prefix, line, "\n");
      prefix = "    ";
    }
  }
  return text;
}

std::string NewSweepId(absl::string_view name, absl::Time now) {
  return absl::StrCat(
      name, "-", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()),
      "-", NewRequestId().substr(0, 4));
}

std::string FormatSweepPlan(const std::string& sweep_id, Scaling scaling,
                            const std::vector<v1::RunSpec>& points) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::RunSpec& point : points) {
    rows.push_back({point.name(), absl::StrCat(point.nodes()),
                    absl::StrCat(point.ranks_per_node()),
                    absl::StrCat(Devices(point)), point.precision(),
                    point.compression(), absl::StrCat(point.batch_size()),
                    absl::StrCat(point.batch_size() * Devices(point))});
  }
  return absl::StrCat(
      "sweep ", sweep_id, ": ", points.size(), " runs, ",
      std::string(Name(scaling)), " scaling (",
      scaling == Scaling::kStrong ? "global batch fixed"
                                  : "batch per rank fixed",
      "); dry run, nothing submitted\n",
      FormatTable({"NAME", "NODES", "RANKS/NODE", "DEVICES", "PRECISION",
                   "COMPRESSION", "BATCH/RANK", "GLOBAL BATCH"},
                  rows, {1, 2, 3, 6, 7}));
}

int SubmitSweep(const CommandContext& context, const std::string& spec_source,
                const std::string& spec_yaml, const SweepOptions& options,
                bool wait, const std::string& request_id) {
  auto refused = [&](const absl::Status& status) {
    context.err << "hpcai500: sweep of " << spec_source
                << " refused: " << status.message() << "\n";
    return kExitRefused;
  };
  absl::StatusOr<Suite> suite = ParseSuite(spec_yaml);
  if (suite.ok() && suite->specs.size() != 1) {
    return refused(absl::InvalidArgumentError(absl::StrCat(
        "a sweep takes one spec, not a suite of ", suite->specs.size())));
  }
  const Registry& registry = Registry::Builtin();
  absl::StatusOr<v1::RunSpec> base = ParseRunSpec(spec_yaml, registry);
  if (!base.ok()) return refused(base.status());
  const std::string sweep_id = NewSweepId(base->name(), absl::Now());
  absl::StatusOr<std::vector<v1::RunSpec>> points =
      ExpandSweep(*base, options, sweep_id, registry);
  if (!points.ok()) return refused(points.status());
  if (options.dry_run) {
    context.out << FormatSweepPlan(sweep_id, options.scaling, *points);
    return kExitOk;
  }
  context.err << "sweep " << sweep_id << ": " << points->size() << " runs, "
              << Name(options.scaling) << " scaling\n";
  return RunWatcher(context).Submit(spec_source,
                                    SweepSuiteYaml(sweep_id, *points), wait,
                                    /*runs=*/nullptr, request_id);
}

}  // namespace hpcai500
