// An assignment checked field by field and planned into each local rank's
// argv, environment and files.
#include "agent/launch/assignment.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "agent/attempts/attempt_layout.h"
#include "common/lease_holder.h"
#include "common/status_macros.h"
#include "common/vocabulary.h"
#include "common/worker_args.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "methodology/registry.h"
#include "methodology/spec.h"

namespace hpcai500::agent {
namespace {

constexpr size_t kMaxNameLength = 64;

// How this file's errors name a field: "assignment: <name>".
std::string Field(absl::string_view name) {
  return absl::StrCat("assignment: ", name);
}

bool IsName(absl::string_view s) {
  return !s.empty() && s.size() <= kMaxNameLength &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

absl::Status CheckName(absl::string_view field, absl::string_view value) {
  if (!IsName(value)) {
    return InvalidAssignment(
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
    return InvalidAssignment(
        field, absl::StrCat("must be a host name or address, got '",
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

// The text of `field` of `spec` as a worker flag takes it: an integer's
// digits, a string as it is, a bool "true" or "" (false). Internal for a type
// no worker flag carries.
absl::StatusOr<std::string> FlagText(
    const v1::RunSpec& spec, const google::protobuf::FieldDescriptor& f) {
  const google::protobuf::Reflection& r = *spec.GetReflection();
  using Field = google::protobuf::FieldDescriptor;
  if (!f.is_repeated()) {
    switch (f.cpp_type()) {
      case Field::CPPTYPE_INT32:
        return absl::StrCat(r.GetInt32(spec, &f));
      case Field::CPPTYPE_INT64:
        return absl::StrCat(r.GetInt64(spec, &f));
      case Field::CPPTYPE_STRING:
        return r.GetString(spec, &f);
      case Field::CPPTYPE_BOOL:
        // false stays unset: a worker without the flag runs as before.
        return r.GetBool(spec, &f) ? "true" : "";
      default:
        break;
    }
  }
  return absl::InternalError(absl::StrCat("RunSpec.", f.name(),
                                          " is named like a worker flag but "
                                          "has a type no flag carries"));
}

// The worker flags that carry the spec: every RunSpec field named like a
// WorkerArgs flag (batch_size: --batch-size), read by that flag's own rule
// and range (common/worker_args.cc), so a spec field reaches the worker with
// no line here. An empty string stays unset: a coordinator before v0.2 sent
// no compression, which the worker takes as none. InvalidArgument
// "assignment: spec.<field>: <the flag's refusal>". The caller adds the
// node's and the rank's flags.
absl::StatusOr<WorkerArgs> SpecWorkerArgs(const v1::RunSpec& spec) {
  WorkerArgs args;
  for (const std::string& flag : WorkerArgs::FlagNames()) {
    const std::string name = absl::StrReplaceAll(flag, {{"-", "_"}});
    const google::protobuf::FieldDescriptor* field =
        spec.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) continue;
    ASSIGN_OR_RETURN(std::string text, FlagText(spec, *field));
    std::string error;
    if (!text.empty() && !args.Set(flag, text, &error)) {
      return InvalidAssignment(absl::StrCat("spec.", name), error);
    }
  }
  return args;
}

// The environment of one local rank: the node's base environment with the
// rank layout (and, for cuda, the rank's device; and the lease's holder)
// put over it.
std::vector<std::string> WorkerEnv(const v1::Assignment& a,
                                   const NodeContext& node, int rank,
                                   int local) {
  std::vector<std::string> overrides = {
      absl::StrCat("RANK=", rank),
      absl::StrCat("WORLD_SIZE=", a.world_size()),
      absl::StrCat("LOCAL_RANK=", local),
      absl::StrCat("LOCAL_WORLD_SIZE=", a.ranks_size()),
      absl::StrCat("MASTER_ADDR=", a.master_addr()),
      absl::StrCat("MASTER_PORT=", a.master_port())};
  if (node.lease_holder_pid > 0) {
    overrides.push_back(
        absl::StrCat(kLeaseHolderEnvVar, "=", node.lease_holder_pid));
  }
  if (a.spec().device() == Name(Device::kCuda)) {
    overrides.push_back(absl::StrCat("CUDA_VISIBLE_DEVICES=",
                                     VisibleDevice(node.base_env, local)));
  }
  std::vector<std::string> env;
  for (const std::string& kv : node.base_env) {
    absl::string_view name = absl::string_view(kv).substr(0, kv.find('='));
    bool overridden = std::any_of(
        overrides.begin(), overrides.end(), [&](const std::string& o) {
          return absl::StartsWith(o, absl::StrCat(name, "="));
        });
    if (!overridden) env.push_back(kv);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// resume_from_epoch within the spec's epochs; resume_from_attempt an
// earlier attempt when resuming, else 0 or an earlier attempt.
absl::Status CheckResume(const v1::Assignment& a) {
  RETURN_IF_ERROR(CheckInRange(Field("resume_from_epoch"),
                               a.resume_from_epoch(), 0, a.spec().epochs()));
  const bool resumes = a.resume_from_epoch() > 0;
  const int32_t from = a.resume_from_attempt();
  if (!resumes && from == 0) return absl::OkStatus();
  if (from < 1 || from >= a.key().attempt()) {
    const std::string earlier =
        a.key().attempt() > 1 ? absl::StrCat("1 .. ", a.key().attempt() - 1)
                              : "none";
    return InvalidAssignment(
        "resume_from_attempt",
        absl::StrCat("must be an earlier attempt (", earlier, "), got ", from));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status InvalidAssignment(absl::string_view field,
                               absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(Field(field), ": ", reason));
}

bool ReadsNodeData(const ConfigInfo& config) {
  return config.real_data && config.generate_samples == 0;
}

absl::Status ValidateAttemptKey(const v1::AttemptKey& key) {
  RETURN_IF_ERROR(CheckInRange(Field("key.run_id"), key.run_id(), 1,
                               std::numeric_limits<int64_t>::max()));
  return CheckInRange(Field("key.attempt"), key.attempt(), 0, kMaxAttempt);
}

absl::Status ValidateStartAssignment(const v1::Assignment& a) {
  if (a.phase() != v1::Assignment::PHASE_START) {
    return InvalidAssignment("phase", "must be PHASE_START");
  }
  RETURN_IF_ERROR(ValidateAttemptKey(a.key()));
  const v1::RunSpec& spec = a.spec();
  RETURN_IF_ERROR(CheckName("spec.workload", spec.workload()));
  RETURN_IF_ERROR(CheckName("spec.config", spec.config()));
  RETURN_IF_ERROR(CheckOneOf<Device>(Field("spec.device"), spec.device()));
  RETURN_IF_ERROR(
      CheckOneOf<Precision>(Field("spec.precision"), spec.precision()));
  if (!spec.compression().empty()) {  // empty: a coordinator before v0.2
    RETURN_IF_ERROR(
        CheckOneOf<Compression>(Field("spec.compression"), spec.compression()));
  }
  RETURN_IF_ERROR(SpecWorkerArgs(spec).status());
  RETURN_IF_ERROR(
      CheckInRange(Field("world_size"), a.world_size(), 1, kMaxWorldSize));
  RETURN_IF_ERROR(
      CheckInRange(Field("node_rank"), a.node_rank(), 0, a.world_size() - 1));
  RETURN_IF_ERROR(CheckHost("master_addr", a.master_addr()));
  RETURN_IF_ERROR(
      CheckInRange(Field("master_port"), a.master_port(), 1, 65535));
  RETURN_IF_ERROR(CheckResume(a));
  RETURN_IF_ERROR(
      ParseLauncher(Field("spec.launcher"), spec.launcher()).status());
  if (a.ranks().empty()) return InvalidAssignment("ranks", "must not be empty");
  std::set<int> seen;
  for (int i = 0; i < a.ranks_size(); ++i) {
    int rank = a.ranks(i);
    std::string field = absl::StrCat("ranks[", i, "]");
    if (rank < 0 || rank >= a.world_size()) {
      return InvalidAssignment(
          field, absl::StrCat(rank, " is outside world size ", a.world_size()));
    }
    if (!seen.insert(rank).second) {
      return InvalidAssignment(field,
                               absl::StrCat("rank ", rank, " appears twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<AttemptPlan> PlanAttempt(const v1::Assignment& a,
                                        const NodeContext& node) {
  RETURN_IF_ERROR(ValidateStartAssignment(a));
  AttemptPlan plan;
  plan.dir = AttemptLayout(node.workdir).AttemptDir(a.key());
  plan.checkpoint_dir =
      AttemptLayout::CheckpointDir(node.checkpoint_root, a.key());
  const int local_world = a.ranks_size();
  ASSIGN_OR_RETURN(WorkerArgs args, SpecWorkerArgs(a.spec()));
  args.threads = std::max(1, node.cpus / local_world);
  if (std::string data_dir = NodeDataDir(a.spec(), node); !data_dir.empty()) {
    args.data = std::move(data_dir);
  }
  args.checkpoint_dir = plan.checkpoint_dir;
  // Named in each checkpoint's manifest, which the coordinator checks.
  args.run_id = a.key().run_id();
  args.attempt = a.key().attempt();
  // Only ranks the agent starts itself follow a lease: mpirun and srun stop
  // the ranks they started when the attempt is cancelled through rank 0's
  // node, and a followed rank on another node was seen fenced by a lease its
  // live agent renewed (the netns mpirun test, 1 run in 5; cause not found).
  if (a.spec().launcher().empty() ||
      a.spec().launcher() == Name(Launcher::kAgent)) {
    args.lease_file = AttemptLayout::LeasePath(plan.dir);
  }
  if (a.resume_from_epoch() > 0) {
    v1::AttemptKey source = a.key();
    source.set_attempt(a.resume_from_attempt());
    plan.resume_source = AttemptLayout::CheckpointPath(
        node.checkpoint_root, source, a.resume_from_epoch());
    args.resume = true;
  }
  for (int local = 0; local < local_world; ++local) {
    RankPlan rank = RankPaths(plan.dir, a.ranks(local));
    rank.local_rank = local;
    rank.launch.cwd = plan.dir;
    args.events_file = rank.events_path;
    rank.launch.argv = {node.worker_path};
    for (std::string& arg : args.ToArgv()) {
      rank.launch.argv.push_back(std::move(arg));
    }
    rank.launch.env = WorkerEnv(a, node, rank.rank, local);
    plan.ranks.push_back(std::move(rank));
  }
  return plan;
}

}  // namespace hpcai500::agent
