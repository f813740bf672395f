// The one launch of a launcher run (spec.launcher mpirun or srun): rank 0's
// agent starts every rank of the attempt, on every node, with one OpenMPI
// `mpirun` or one Slurm `srun` job step, instead of each agent forking its
// own. This file builds that command and its files from the PHASE_START
// assignment's launch_nodes; it touches no disk and starts nothing.
//
// Each rank gets its own argv (its events file lives in its node's attempt
// folder, under that node's agent's workdir): through OpenMPI's MPMD app
// file (one line per rank, in rank order, "-np 1 -host ADDR:K ...") or
// srun's --multi-prog file ("RANK PROGRAM ARGS") with the task layout pinned
// by --distribution=arbitrary and SLURM_HOSTFILE (one node name per rank).
// Workers read their rank from the launcher's environment
// (OMPI_COMM_WORLD_*, SLURM_PROCID...) and rendezvous at MASTER_ADDR and
// MASTER_PORT, which the launcher passes on with the allowlisted
// environment (agent/launch/worker_env.h).
//
// Thread-safe: free functions.
#ifndef HPCAI500_AGENT_LAUNCH_LAUNCHER_H_
#define HPCAI500_AGENT_LAUNCH_LAUNCHER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/launch/assignment.h"
#include "agent/system/process.h"
#include "methodology/spec.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The agent's settings for launchers (its flags and its own environment).
struct LauncherSettings {
  std::string mpirun = "mpirun";  // --mpirun PATH
  std::string rsh_agent = "ssh";  // --mpirun-rsh-agent: plm_rsh_agent
  std::string srun = "srun";      // --srun PATH
  bool as_root = false;           // adds --allow-run-as-root to mpirun
  std::string slurm_job_id;       // the agent's SLURM_JOB_ID; empty outside
  // The agent's SLURM_CONF (where srun finds the cluster's slurm.conf when
  // it is not in the default place): in srun's environment, not in the
  // ranks' lines (srun --export=ALL hands its environment to the tasks).
  std::string slurm_conf;
};

// What rank 0's agent writes and starts.
struct LauncherPlan {
  LaunchSpec launch;        // mpirun or srun; output in the attempt folder
  std::string config_path;  // the app file or the multi-prog file
  std::string config_text;
  std::string hostfile_path;  // srun: SLURM_HOSTFILE; empty for mpirun
  std::string hostfile_text;
};

// Files of the launch inside the attempt folder: the launcher's output; on
// every node the ranks it follows (FormatFollowedRanks); on rank 0's node the
// launcher's pid file (agent/attempts/pid_file.h) and how it ended
// (FormatLauncherEnd). With them a restarted agent follows the ranks again
// (those not found yet too), reattaches to the launcher and keeps a
// scancelled step's verdict.
inline constexpr char kLauncherStdout[] = "launcher.stdout";
inline constexpr char kLauncherStderr[] = "launcher.stderr";
inline constexpr char kFollowedRanksFile[] = "launcher.ranks";
inline constexpr char kLauncherPidFile[] = "launcher.pid";
inline constexpr char kLauncherEndFile[] = "launcher.end";

// Builds the launch of `a` (a checked PHASE_START for node rank 0 with
// launch_nodes) with `launcher` (kMpirun or kSrun). Each node's ranks get
// the argv PlanAttempt gives on that node: this node's worker binary and
// data directories, that node's workdir, checkpoint root and CPUs.
// InvalidArgument naming the field when launch_nodes are missing, do not
// cover ranks 0..world_size-1 in order, start with other ranks than
// a.ranks, or carry a host, name or path the launcher's files cannot hold
// (whitespace, quotes, '%', '#', relative or '..' paths); FailedPrecondition
// for srun outside a Slurm allocation (no SLURM_JOB_ID).
absl::StatusOr<LauncherPlan> PlanLauncher(Launcher launcher,
                                          const v1::Assignment& a,
                                          const NodeContext& node,
                                          const LauncherSettings& settings,
                                          const std::string& attempt_dir);

// How a launch ended, as the agent tells it from the launcher's exit.
struct LauncherEnd {
  // Set when the site's scheduler stopped the job (a scancelled Slurm step):
  // the reason the run is recorded cancelled with.
  std::string cancelled;
  // Set when the launcher failed (non-zero exit): what to say for a rank it
  // never started.
  std::string error;
};

// srun ended with `status`, and its stderr ends with `stderr_tail`;
// `asked` says whether this agent stopped it (a cancel or a fence). A step
// cancelled by Slurm (scancel, not us): srun was killed by SIGTERM or
// SIGKILL, or returned 128 + one of them (its code for tasks killed by a
// signal), and slurmstepd's "*** STEP ... CANCELLED AT ..." line (or JOB)
// is in its stderr. mpirun is never cancelled by a scheduler here.
// `status` is nullopt when the agent cannot know it (a launcher it
// reattached to after a restart is not its child): then slurmstepd's line
// alone tells a scancel, and no error is told.
LauncherEnd ClassifyLauncherExit(Launcher launcher,
                                 const std::optional<ExitStatus>& status,
                                 const std::string& stderr_tail, bool asked);

// launcher.end: "cancelled REASON", "failed ERROR" or "ok", one line.
std::string FormatLauncherEnd(const LauncherEnd& end);
// InvalidArgument when `text` is none of those.
absl::StatusOr<LauncherEnd> ParseLauncherEnd(absl::string_view text);

// launcher.ranks: the launcher and the ranks this node follows,
// "LAUNCHER RANK...", one line.
struct FollowedRanks {
  Launcher launcher = Launcher::kMpirun;
  std::vector<int> ranks;
};
std::string FormatFollowedRanks(const FollowedRanks& followed);
// InvalidArgument unless `text` names mpirun or srun and at least one rank
// in 0..kMaxWorldSize-1.
absl::StatusOr<FollowedRanks> ParseFollowedRanks(absl::string_view text);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_LAUNCH_LAUNCHER_H_
