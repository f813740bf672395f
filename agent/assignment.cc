#include "agent/assignment.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/options.h"
#include "common/registry.h"
#include "common/spec.h"
#include "common/status_macros.h"

namespace hpcai500::agent {
namespace {

constexpr int kMaxWorldSize = 65536;
constexpr size_t kMaxNameLength = 64;

// How this file's errors name a field: "assignment: <name>".
std::string Field(absl::string_view name) {
  return absl::StrCat("assignment: ", name);
}

absl::Status Invalid(absl::string_view field, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(Field(field), ": ", reason));
}

bool IsName(absl::string_view s) {
  return !s.empty() && s.size() <= kMaxNameLength &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

absl::Status CheckName(absl::string_view field, absl::string_view value) {
  if (!IsName(value)) {
    return Invalid(
        field, absl::StrCat("must match [a-z0-9_]+ (at most ", kMaxNameLength,
                            " characters), got '", value.substr(0, 80), "'"));
  }
  return absl::OkStatus();
}

// A host name or an IPv4/IPv6 address: letters, digits, '.', '-', ':'.
absl::Status CheckHost(absl::string_view field, absl::string_view host) {
  bool ok = !host.empty() && host.size() <= 253 &&
            std::all_of(host.begin(), host.end(), [](char c) {
              return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':';
            });
  if (!ok) {
    return Invalid(field, absl::StrCat("must be a host name or address, got '",
                                       host.substr(0, 80), "'"));
  }
  return absl::OkStatus();
}

// The device a local rank sees: the local_rank-th entry of the agent's own
// CUDA_VISIBLE_DEVICES when it has one, else the local rank itself.
std::string VisibleDevice(const std::vector<std::string>& env, int local_rank) {
  for (const std::string& kv : env) {
    if (absl::StartsWith(kv, "CUDA_VISIBLE_DEVICES=")) {
      std::vector<std::string> ids =
          absl::StrSplit(kv.substr(sizeof("CUDA_VISIBLE_DEVICES=") - 1), ',',
                         absl::SkipEmpty());
      if (local_rank < static_cast<int>(ids.size())) return ids[local_rank];
    }
  }
  return absl::StrCat(local_rank);
}

// This node's directory for the data of spec's config, or "" when the node
// maps none (the worker then reads the registry's data_dir).
std::string NodeDataDir(const v1::RunSpec& spec, const NodeContext& node) {
  const ConfigInfo* config =
      Registry::Builtin().FindConfig(spec.workload(), spec.config());
  if (config == nullptr || !ReadsNodeData(*config)) return "";
  auto it = node.data_dirs.find(config->dataset);
  return it == node.data_dirs.end() ? "" : it->second;
}

}  // namespace

absl::Status ValidateAttemptKey(const v1::AttemptKey& key) {
  RETURN_IF_ERROR(CheckInRange(Field("key.run_id"), key.run_id(), 1,
                               std::numeric_limits<int64_t>::max()));
  return CheckInRange(Field("key.attempt"), key.attempt(), 0, 1000000);
}

absl::Status ValidateStartAssignment(const v1::Assignment& a) {
  if (a.phase() != v1::Assignment::PHASE_START) {
    return Invalid("phase", "must be PHASE_START");
  }
  RETURN_IF_ERROR(ValidateAttemptKey(a.key()));
  const v1::RunSpec& spec = a.spec();
  RETURN_IF_ERROR(CheckName("spec.workload", spec.workload()));
  RETURN_IF_ERROR(CheckName("spec.config", spec.config()));
  RETURN_IF_ERROR(CheckOneOf(Field("spec.device"), spec.device(), kDevices));
  RETURN_IF_ERROR(
      CheckOneOf(Field("spec.precision"), spec.precision(), kPrecisions));
  if (!spec.compression().empty()) {  // empty: a coordinator before v0.2
    RETURN_IF_ERROR(CheckOneOf(Field("spec.compression"), spec.compression(),
                               kCompressions));
  }
  RETURN_IF_ERROR(CheckInRange(Field("spec.epochs"), spec.epochs(), 1, 100000));
  RETURN_IF_ERROR(
      CheckInRange(Field("spec.batch_size"), spec.batch_size(), 1, 65536));
  RETURN_IF_ERROR(
      CheckInRange(Field("world_size"), a.world_size(), 1, kMaxWorldSize));
  RETURN_IF_ERROR(
      CheckInRange(Field("node_rank"), a.node_rank(), 0, a.world_size() - 1));
  RETURN_IF_ERROR(CheckHost("master_addr", a.master_addr()));
  RETURN_IF_ERROR(
      CheckInRange(Field("master_port"), a.master_port(), 1, 65535));
  if (a.ranks().empty()) return Invalid("ranks", "must not be empty");
  std::set<int> seen;
  for (int i = 0; i < a.ranks_size(); ++i) {
    int rank = a.ranks(i);
    std::string field = absl::StrCat("ranks[", i, "]");
    if (rank < 0 || rank >= a.world_size()) {
      return Invalid(
          field, absl::StrCat(rank, " is outside world size ", a.world_size()));
    }
    if (!seen.insert(rank).second) {
      return Invalid(field, absl::StrCat("rank ", rank, " appears twice"));
    }
  }
  return absl::OkStatus();
}

std::string AttemptDir(const std::string& workdir, const v1::AttemptKey& key) {
  return absl::StrCat(workdir, "/runs/", key.run_id(), "/attempt-",
                      key.attempt());
}

RankPlan RankPaths(const std::string& attempt_dir, int rank) {
  std::string base = absl::StrCat(attempt_dir, "/rank-", rank);
  RankPlan plan;
  plan.rank = rank;
  plan.events_path = base + ".events";
  plan.pid_path = base + ".pid";
  plan.acked_path = base + ".acked";
  plan.exit_path = base + ".exit";
  plan.done_path = base + ".done";
  plan.launch.stdout_path = base + ".stdout";
  plan.launch.stderr_path = base + ".stderr";
  return plan;
}

absl::StatusOr<AttemptPlan> PlanAttempt(const v1::Assignment& a,
                                        const NodeContext& node) {
  RETURN_IF_ERROR(ValidateStartAssignment(a));
  const v1::RunSpec& spec = a.spec();
  AttemptPlan plan;
  plan.dir = AttemptDir(node.workdir, a.key());
  const int local_world = a.ranks_size();
  const int threads = std::max(1, node.cpus / local_world);
  const std::string data_dir = NodeDataDir(spec, node);
  for (int local = 0; local < local_world; ++local) {
    RankPlan rank = RankPaths(plan.dir, a.ranks(local));
    rank.local_rank = local;
    rank.launch.cwd = plan.dir;
    rank.launch.argv = {
        node.worker_path,
        "--workload",
        spec.workload(),
        "--config",
        spec.config(),
        "--epochs",
        absl::StrCat(spec.epochs()),
        "--batch-size",
        absl::StrCat(spec.batch_size()),
        "--precision",
        spec.precision(),
        "--compression",
        spec.compression().empty() ? std::string("none") : spec.compression(),
        "--device",
        spec.device(),
        "--seed",
        absl::StrCat(spec.seed()),
        "--events-file",
        rank.events_path,
        "--threads",
        absl::StrCat(threads)};
    if (!data_dir.empty()) {
      rank.launch.argv.insert(rank.launch.argv.end(), {"--data", data_dir});
    }
    std::vector<std::string> overrides = {
        absl::StrCat("RANK=", rank.rank),
        absl::StrCat("WORLD_SIZE=", a.world_size()),
        absl::StrCat("LOCAL_RANK=", local),
        absl::StrCat("LOCAL_WORLD_SIZE=", local_world),
        absl::StrCat("MASTER_ADDR=", a.master_addr()),
        absl::StrCat("MASTER_PORT=", a.master_port())};
    if (spec.device() == "cuda") {
      overrides.push_back(absl::StrCat("CUDA_VISIBLE_DEVICES=",
                                       VisibleDevice(node.base_env, local)));
    }
    for (const std::string& kv : node.base_env) {
      absl::string_view name = absl::string_view(kv).substr(0, kv.find('='));
      bool overridden = std::any_of(
          overrides.begin(), overrides.end(), [&](const std::string& o) {
            return absl::StartsWith(o, absl::StrCat(name, "="));
          });
      if (!overridden) rank.launch.env.push_back(kv);
    }
    rank.launch.env.insert(rank.launch.env.end(), overrides.begin(),
                           overrides.end());
    plan.ranks.push_back(std::move(rank));
  }
  return plan;
}

}  // namespace hpcai500::agent
