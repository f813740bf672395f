// The pure parts of `hpcai500 check`: the node's verdict, the noop spec
// and the report (cli/commands/check.h).
#include "cli/commands/check.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/vocabulary.h"
#include "methodology/registry.h"
#include "methodology/spec.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// The node states (server/coordinator/coordinator.cc, as sinfo) in which a node
// takes no new run.
bool TakesNoRuns(const std::string& state) {
  return state == "down" || state == "drained" || state == "draining";
}

// "0.123 s", or "-" for a phase not reached.
std::string Seconds(double seconds) {
  return seconds < 0 ? "-" : absl::StrFormat("%.3f s", seconds);
}

nlohmann::ordered_json SecondsOrNull(double seconds) {
  return seconds < 0 ? nlohmann::ordered_json(nullptr)
                     : nlohmann::ordered_json(seconds);
}

}  // namespace

std::string NodeUnavailable(const v1::ListNodesResponse& nodes,
                            const std::string& name) {
  std::vector<std::string> names;
  for (const v1::Node& node : nodes.nodes()) {
    if (node.name() != name) {
      names.push_back(node.name());
      continue;
    }
    if (!TakesNoRuns(node.state())) return "";
    return absl::StrCat("node ", name, " is ", node.state(),
                        node.state_reason().empty() ? "" : ": ",
                        node.state_reason());
  }
  std::sort(names.begin(), names.end());
  return absl::StrCat("unknown node '", name, "' (registered: ",
                      names.empty() ? "none" : absl::StrJoin(names, ", "), ")");
}

CheckLayout CheckLayoutOf(const v1::Node& node) {
  CheckLayout layout;
  layout.ranks = std::max(1, node.slots());
  layout.device = node.gpus() >= layout.ranks ? Device::kCuda : Device::kCpu;
  return layout;
}

std::string CheckSpecYaml(const v1::Node& node) {
  const CheckLayout layout = CheckLayoutOf(node);
  v1::RunSpec spec;
  spec.set_name("check");
  spec.set_workload(kNoopWorkload);
  spec.set_config("noop");
  spec.set_level("system");
  spec.set_nodes(1);
  spec.set_ranks_per_node(layout.ranks);
  spec.set_device(std::string(Name(layout.device)));
  spec.set_batch_size(1);
  spec.set_precision(std::string(Name(Precision::kFp32)));
  spec.set_compression(std::string(Name(Compression::kNone)));
  spec.set_seed(0);
  spec.set_system(absl::StrCat("check of ", node.name()));
  spec.set_epochs(1);
  spec.set_repetitions(1);
  spec.set_max_retries(0);  // a failure is the answer, not a reason to retry
  (*spec.mutable_constraints())[kNodeLabel] = node.name();
  return RunSpecToYaml(spec);
}

std::string CheckLines(const CheckReport& r) {
  const std::string prefix = absl::StrCat("check ", r.node, ": ");
  std::string text;
  auto line = [&](const char* phase, double seconds, const std::string& what) {
    if (seconds < 0) return;
    absl::StrAppendFormat(&text, "%s%-16s %9s  %s\n", prefix, phase,
                          Seconds(seconds), what);
  };
  line("queued", r.queued_s, absl::StrCat("run ", r.run_id, " placed"));
  line("started", r.started_s,
       absl::StrCat(r.ranks, " rank(s) launched on ", r.device));
  line("rendezvous/epoch", r.epoch_s,
       absl::StrCat("joined ", r.device == "cuda" ? "NCCL" : "Gloo",
                    " and all-reduced (worker's clock, slowest rank)"));
  line("exited", r.exited_s, absl::StrCat("run ", r.state));
  if (r.healthy) {
    absl::StrAppendFormat(&text, "%shealthy (%.3f s)\n", prefix, r.total_s);
  } else {
    absl::StrAppend(&text, prefix, "UNHEALTHY: ", r.problem, "\n");
  }
  return text;
}

std::string CheckJson(const CheckReport& r) {
  nlohmann::ordered_json json = {
      {"node", r.node},
      {"healthy", r.healthy},
      {"problem", r.problem},
      {"run_id", r.run_id},
      {"state", r.state},
      {"device", r.device},
      {"ranks", r.ranks},
      {"phases",
       {{"queued_s", SecondsOrNull(r.queued_s)},
        {"started_s", SecondsOrNull(r.started_s)},
        {"rendezvous_epoch_s", SecondsOrNull(r.epoch_s)},
        {"exited_s", SecondsOrNull(r.exited_s)}}},
      {"total_s", r.total_s}};
  return json.dump(2) + "\n";
}

}  // namespace hpcai500
