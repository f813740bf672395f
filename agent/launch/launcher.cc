// The mpirun app file or srun multi-prog file (and hostfile) of a launcher
// run, built and checked from the assignment's launch_nodes; how a launch
// ended, told and recorded.
#include "agent/launch/launcher.h"

#include <signal.h>

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/attempts/attempt_layout.h"
#include "agent/launch/assignment.h"
#include "agent/launch/worker_env.h"
#include "common/status_macros.h"

namespace hpcai500::agent {
namespace {

// A word the launchers' files keep as one argument: OpenMPI's app file and
// srun's multi-prog file split lines at whitespace, take quotes, '#' starts
// a comment and srun expands '%t' and '%o'.
bool IsPlainWord(absl::string_view word) {
  return !word.empty() && std::none_of(word.begin(), word.end(), [](char c) {
    return c <= ' ' || c == 0x7f || c == '\'' || c == '"' || c == '\\' ||
           c == '%' || c == '#';
  });
}

absl::Status CheckWord(absl::string_view field, absl::string_view word) {
  if (!IsPlainWord(word)) {
    return InvalidAssignment(
        field, absl::StrCat("'", word.substr(0, 120),
                            "' cannot pass through the launcher's "
                            "file (empty, or whitespace, quotes, "
                            "'%' or '#')"));
  }
  return absl::OkStatus();
}

absl::Status CheckAbsolutePath(absl::string_view field,
                               absl::string_view path) {
  RETURN_IF_ERROR(CheckWord(field, path));
  if (path.size() > 4096 || path.front() != '/' ||
      absl::StrContains(absl::StrCat(path, "/"), "/../")) {
    return InvalidAssignment(field,
                             absl::StrCat("must be an absolute path without "
                                          "'..', got '",
                                          path.substr(0, 120), "'"));
  }
  return absl::OkStatus();
}

// A node name or address: letters, digits, '.', '-', '_' (no ':': mpirun's
// "-host ADDR:SLOTS" and Slurm's node lists would misread it).
absl::Status CheckHostWord(absl::string_view field, absl::string_view host) {
  const bool ok = !host.empty() && host.size() <= 253 &&
                  std::all_of(host.begin(), host.end(), [](char c) {
                    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                           c == '_';
                  });
  if (!ok) {
    return InvalidAssignment(
        field, absl::StrCat("must be a host name or IPv4 address, got '",
                            host.substr(0, 80), "'"));
  }
  return absl::OkStatus();
}

// launch_nodes: every rank once, in order, node 0 being this node.
absl::Status CheckLaunchNodes(const v1::Assignment& a) {
  if (a.launch_nodes().empty()) {
    return InvalidAssignment(
        "launch_nodes",
        "a launcher run's rank 0 node needs every node of the "
        "attempt");
  }
  int next = 0;
  for (int i = 0; i < a.launch_nodes_size(); ++i) {
    const v1::LaunchNode& n = a.launch_nodes(i);
    const std::string field = absl::StrCat("launch_nodes[", i, "]");
    RETURN_IF_ERROR(CheckHostWord(absl::StrCat(field, ".name"), n.name()));
    RETURN_IF_ERROR(
        CheckHostWord(absl::StrCat(field, ".address"), n.address()));
    RETURN_IF_ERROR(
        CheckAbsolutePath(absl::StrCat(field, ".workdir"), n.workdir()));
    RETURN_IF_ERROR(CheckAbsolutePath(absl::StrCat(field, ".checkpoint_root"),
                                      n.checkpoint_root()));
    RETURN_IF_ERROR(CheckInRange(absl::StrCat("assignment: ", field, ".cpus"),
                                 n.cpus(), 0, 1 << 20));
    if (!n.iface().empty()) {
      RETURN_IF_ERROR(CheckHostWord(absl::StrCat(field, ".iface"), n.iface()));
    }
    if (n.ranks().empty()) return InvalidAssignment(field, "holds no rank");
    for (int rank : n.ranks()) {
      if (rank != next) {
        return InvalidAssignment(
            absl::StrCat(field, ".ranks"),
            absl::StrCat("expected rank ", next, ", got ", rank,
                         " (every rank once, in order)"));
      }
      ++next;
    }
  }
  if (next != a.world_size()) {
    return InvalidAssignment(
        "launch_nodes",
        absl::StrCat("hold ", next, " ranks of ", a.world_size()));
  }
  if (!std::equal(a.ranks().begin(), a.ranks().end(),
                  a.launch_nodes(0).ranks().begin(),
                  a.launch_nodes(0).ranks().end())) {
    return InvalidAssignment("launch_nodes[0].ranks",
                             "must be this node's ranks");
  }
  return absl::OkStatus();
}

// One node's ranks as that node's agent would start them.
struct NodeRanks {
  const v1::LaunchNode* node;
  std::vector<RankPlan> ranks;
};

absl::StatusOr<std::vector<NodeRanks>> PlanEveryNode(const v1::Assignment& a,
                                                     const NodeContext& here) {
  std::vector<NodeRanks> nodes;
  for (int i = 0; i < a.launch_nodes_size(); ++i) {
    const v1::LaunchNode& n = a.launch_nodes(i);
    v1::Assignment part = a;
    part.clear_launch_nodes();
    part.set_node_rank(i);
    *part.mutable_ranks() = n.ranks();
    NodeContext there = here;
    there.workdir = n.workdir();
    there.checkpoint_root = n.checkpoint_root();
    there.cpus = std::max(1, n.cpus());
    ASSIGN_OR_RETURN(AttemptPlan plan, PlanAttempt(part, there));
    for (const RankPlan& rank : plan.ranks) {
      for (const std::string& word : rank.launch.argv) {
        RETURN_IF_ERROR(CheckWord(
            absl::StrCat("rank ", rank.rank, "'s command line"), word));
      }
    }
    nodes.push_back({&n, std::move(plan.ranks)});
  }
  return nodes;
}

// The launcher's own environment: the node's allowlisted one without the
// interface variables (each node has its own: set per node where the
// launcher can) and with the rendezvous, which the launcher hands to every
// rank.
std::vector<std::string> LauncherEnv(const v1::Assignment& a,
                                     const NodeContext& node) {
  std::vector<std::string> env;
  for (const std::string& kv : node.base_env) {
    if (!absl::StartsWith(kv, "MASTER_ADDR=") &&
        !absl::StartsWith(kv, "MASTER_PORT=") &&
        !IsInterfaceEnvName(kv.substr(0, kv.find('=')))) {
      env.push_back(kv);
    }
  }
  env.push_back(absl::StrCat("MASTER_ADDR=", a.master_addr()));
  env.push_back(absl::StrCat("MASTER_PORT=", a.master_port()));
  return env;
}

// "-x NAME" for each variable of env (passing its value from mpirun's
// environment), "-x NAME=VALUE" for each of `set`.
std::string ExportFlags(const std::vector<std::string>& env,
                        const std::vector<std::string>& set) {
  std::vector<std::string> flags;
  for (const std::string& kv : env) {
    flags.push_back(absl::StrCat("-x ", kv.substr(0, kv.find('='))));
  }
  for (const std::string& kv : set) flags.push_back(absl::StrCat("-x ", kv));
  return absl::StrJoin(flags, " ");
}

LaunchSpec OutputIn(const std::string& attempt_dir) {
  LaunchSpec spec;
  spec.stdout_path = absl::StrCat(attempt_dir, "/", kLauncherStdout);
  spec.stderr_path = absl::StrCat(attempt_dir, "/", kLauncherStderr);
  spec.cwd = attempt_dir;
  return spec;
}

LauncherPlan MpirunPlan(const v1::Assignment& a, const NodeContext& node,
                        const LauncherSettings& settings,
                        const std::string& attempt_dir,
                        const std::vector<NodeRanks>& nodes) {
  LauncherPlan plan;
  plan.launch = OutputIn(attempt_dir);
  plan.launch.env = LauncherEnv(a, node);
  // Each line carries its own -x: OpenMPI keeps them per app context, so
  // each node's ranks bind to that node's --iface.
  // Slots per host: nodes that share an address (agents on one machine)
  // share its slots.
  std::map<std::string, size_t> slots;
  for (const NodeRanks& n : nodes) slots[n.node->address()] += n.ranks.size();
  for (const NodeRanks& n : nodes) {
    const std::string exports =
        ExportFlags(plan.launch.env, InterfaceEnv(n.node->iface()));
    for (const RankPlan& rank : n.ranks) {
      absl::StrAppend(&plan.config_text, "-np 1 -host ", n.node->address(), ":",
                      slots[n.node->address()], " ", exports, " ",
                      absl::StrJoin(rank.launch.argv, " "), "\n");
    }
  }
  plan.config_path = absl::StrCat(attempt_dir, "/mpirun.app");
  plan.launch.argv = {settings.mpirun};
  if (settings.as_root) plan.launch.argv.push_back("--allow-run-as-root");
  for (const char* word :
       {"--mca", "plm_rsh_agent", settings.rsh_agent.c_str(),
        // One process per rank and no pinning: a worker runs its own
        // threads (--threads) over the node's cores.
        "--bind-to", "none", "--app", plan.config_path.c_str()}) {
    plan.launch.argv.push_back(word);
  }
  return plan;
}

LauncherPlan SrunPlan(const v1::Assignment& a, const NodeContext& node,
                      const LauncherSettings& settings,
                      const std::string& attempt_dir,
                      const std::vector<NodeRanks>& nodes) {
  LauncherPlan plan;
  plan.launch = OutputIn(attempt_dir);
  plan.config_path = absl::StrCat(attempt_dir, "/srun.conf");
  plan.hostfile_path = absl::StrCat(attempt_dir, "/srun.hosts");
  std::vector<std::string> names;
  for (const NodeRanks& n : nodes) {
    names.push_back(n.node->name());
    for (const RankPlan& rank : n.ranks) {
      absl::StrAppend(&plan.config_text, rank.rank, " ",
                      absl::StrJoin(rank.launch.argv, " "), "\n");
      absl::StrAppend(&plan.hostfile_text, n.node->name(), "\n");
    }
  }
  plan.launch.env = LauncherEnv(a, node);
  // srun gives every task one environment: the interface variables only
  // when every node binds the same interface.
  const std::string& iface = nodes.front().node->iface();
  if (std::all_of(nodes.begin(), nodes.end(), [&](const NodeRanks& n) {
        return n.node->iface() == iface;
      })) {
    for (std::string& kv : InterfaceEnv(iface)) {
      plan.launch.env.push_back(std::move(kv));
    }
  }
  // --distribution=arbitrary lays task i on the i-th line of this file.
  plan.launch.env.push_back(
      absl::StrCat("SLURM_HOSTFILE=", plan.hostfile_path));
  if (!settings.slurm_conf.empty()) {
    plan.launch.env.push_back(absl::StrCat("SLURM_CONF=", settings.slurm_conf));
  }
  plan.launch.argv = {settings.srun,
                      absl::StrCat("--jobid=", settings.slurm_job_id),
                      "--overlap",
                      absl::StrCat("--nodelist=", absl::StrJoin(names, ",")),
                      absl::StrCat("--nodes=", nodes.size()),
                      absl::StrCat("--ntasks=", a.world_size()),
                      "--distribution=arbitrary",
                      "--cpu-bind=none",
                      "--kill-on-bad-exit=1",
                      "--export=ALL",
                      absl::StrCat("--job-name=hpcai500-run-", a.key().run_id(),
                                   "-attempt-", a.key().attempt()),
                      "--multi-prog",
                      plan.config_path};
  return plan;
}

}  // namespace

absl::StatusOr<LauncherPlan> PlanLauncher(Launcher launcher,
                                          const v1::Assignment& a,
                                          const NodeContext& node,
                                          const LauncherSettings& settings,
                                          const std::string& attempt_dir) {
  RETURN_IF_ERROR(ValidateStartAssignment(a));
  RETURN_IF_ERROR(CheckLaunchNodes(a));
  ASSIGN_OR_RETURN(std::vector<NodeRanks> nodes, PlanEveryNode(a, node));
  switch (launcher) {
    case Launcher::kMpirun:
      return MpirunPlan(a, node, settings, attempt_dir, nodes);
    case Launcher::kSrun:
      if (settings.slurm_job_id.empty()) {
        return absl::FailedPreconditionError(
            "launcher srun: the agent runs outside a Slurm allocation (no "
            "SLURM_JOB_ID in its environment)");
      }
      RETURN_IF_ERROR(CheckWord("SLURM_JOB_ID", settings.slurm_job_id));
      return SrunPlan(a, node, settings, attempt_dir, nodes);
    case Launcher::kAgent:
      break;
  }
  return absl::InvalidArgumentError(
      "assignment: spec.launcher: agent starts no launcher");
}

LauncherEnd ClassifyLauncherExit(Launcher launcher,
                                 const std::optional<ExitStatus>& status,
                                 const std::string& stderr_tail, bool asked) {
  LauncherEnd end;
  if (status && status->exit_code == 0 && status->signal == 0) return end;
  const std::string name(Name(launcher));
  const bool by_term_or_kill =
      !status || status->signal == SIGTERM || status->signal == SIGKILL ||
      status->exit_code == 128 + SIGTERM || status->exit_code == 128 + SIGKILL;
  if (launcher == Launcher::kSrun && !asked && by_term_or_kill &&
      absl::StrContains(stderr_tail, " CANCELLED AT ")) {
    end.cancelled = "the Slurm step was cancelled (scancel), not by hpcai500";
    return end;
  }
  if (!status) return end;
  end.error = status->signal != 0
                  ? absl::StrCat(name, " killed by signal ", status->signal)
                  : absl::StrCat(name, " exited with code ", status->exit_code);
  return end;
}

std::string FormatLauncherEnd(const LauncherEnd& end) {
  if (!end.cancelled.empty()) return absl::StrCat("cancelled ", end.cancelled);
  if (!end.error.empty()) return absl::StrCat("failed ", end.error);
  return "ok";
}

absl::StatusOr<LauncherEnd> ParseLauncherEnd(absl::string_view text) {
  text = absl::StripTrailingAsciiWhitespace(text);
  LauncherEnd end;
  if (text == "ok") return end;
  if (absl::ConsumePrefix(&text, "cancelled ") && !text.empty()) {
    end.cancelled = std::string(text);
    return end;
  }
  if (absl::ConsumePrefix(&text, "failed ") && !text.empty()) {
    end.error = std::string(text);
    return end;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(kLauncherEndFile,
                   ": expected 'ok', 'cancelled REASON' or 'failed ERROR'"));
}

std::string FormatFollowedRanks(const FollowedRanks& followed) {
  return absl::StrCat(std::string(Name(followed.launcher)), " ",
                      absl::StrJoin(followed.ranks, " "), "\n");
}

absl::StatusOr<FollowedRanks> ParseFollowedRanks(absl::string_view text) {
  const absl::Status bad = absl::InvalidArgumentError(
      absl::StrCat(kFollowedRanksFile, ": expected 'mpirun|srun RANK...'"));
  std::vector<absl::string_view> words =
      absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  if (words.size() < 2) return bad;
  FollowedRanks followed;
  absl::StatusOr<Launcher> launcher = ParseLauncher("launcher", words[0]);
  if (!launcher.ok() || *launcher == Launcher::kAgent) return bad;
  followed.launcher = *launcher;
  for (size_t i = 1; i < words.size(); ++i) {
    int rank = 0;
    if (!absl::SimpleAtoi(words[i], &rank) || rank < 0 ||
        rank >= kMaxWorldSize) {
      return bad;
    }
    followed.ranks.push_back(rank);
  }
  return followed;
}

}  // namespace hpcai500::agent
