// Supervisor is the agent's logic without the network: it turns assignments
// into worker processes, tails their event files, reaps or polls them, kills
// them on cancel (or when the agent fences itself), and produces the messages
// for the coordinator. A rank is done once its exit was reported and
// acknowledged and every event acknowledged; an attempt is kept until all its
// ranks are done, and the attempts of an earlier agent are found in the
// workdir again.
//
// It keeps the attempts and dispatches; the jobs are its parts': the
// reserve phase (PortReservations), the two ways ranks start (each its own
// process, agent/supervisor/rank_processes.h; one mpirun or srun for all,
// LauncherRuns), what is kept of each attempt and rank
// (agent/supervisor/supervised_attempt.h) and the refused ranks (Refusals).
//
// Workdir layout: one folder per attempt, one file of each kind per rank;
// checkpoints: one folder per attempt under the checkpoint root
// (agent/attempts/attempt_layout.h). A resumed attempt gets the earlier
// attempt's checkpoint linked into its folder; a succeeded attempt's folder is
// removed once rank 0 is done, a failed one's stays for a resume.
//
// Not thread-safe: one thread (the Agent's loop) drives it.
#ifndef HPCAI500_AGENT_SUPERVISOR_SUPERVISOR_H_
#define HPCAI500_AGENT_SUPERVISOR_SUPERVISOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/attempts/attempt_folders.h"
#include "agent/attempts/attempt_plan.h"
#include "agent/attempts/worker_leases.h"
#include "agent/launch/assignment.h"
#include "agent/launch/launcher.h"
#include "agent/supervisor/delivery.h"
#include "agent/supervisor/launcher_runs.h"
#include "agent/supervisor/port_reservations.h"
#include "agent/supervisor/refusals.h"
#include "agent/supervisor/supervised_attempt.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

struct SupervisorOptions {
  std::string address;  // this node's address: where rendezvous ports live
  NodeContext node;     // workdir, checkpoint root, worker binary, cpus, env
  int64_t kill_grace_ms = 10000;  // SIGTERM..SIGKILL on cancel
  LauncherSettings launchers;     // mpirun and srun for launcher runs
  // Borrowed; grants each attempt's lease before its workers start. Null:
  // no lease files (the workers run without a lease).
  const WorkerLeases* leases = nullptr;
};

class Supervisor {
 public:
  // processes and clock are borrowed and must outlive the Supervisor.
  Supervisor(SupervisorOptions options, ProcessLauncher* processes,
             Clock* clock);
  ~Supervisor();

  // Scans the workdir for attempts of an earlier agent: a rank whose pid file
  // names a live process with the recorded start time is followed again; a
  // rank whose worker ended meanwhile is reported once its events are read.
  // A launcher run's ranks not found yet are looked for again, and rank 0's
  // node reattaches to its launcher (agent/launch/launcher.h). Returns how many
  // ranks were taken up.
  int Reattach();

  // PHASE_RESERVE: reserves a port and answers PortReserved (or its error).
  // PHASE_START: validates, creates the checkpoint folder (linking in the
  // checkpoint to resume from, if any: a missing one is logged and the
  // workers start anyway), grants the attempt's lease, starts one worker
  // per local rank and answers
  // nothing; a bad assignment or a failed start is answered with
  // WorkerExited.error per rank instead. A launcher run (spec.launcher
  // mpirun or srun) starts no worker here: rank 0's node starts the one
  // launcher over every node (agent/launch/launcher.h), and every node follows
  // its own ranks, found by their --events-file argument once they run.
  std::vector<v1::AgentMessage> HandleAssignment(const v1::Assignment& a);

  // SIGTERM to every worker group of the attempt (and to a launcher this
  // agent started, and to each followed rank itself), SIGKILL after the
  // grace period (in Poll). A followed rank not found by then is reported
  // as never started. An unknown attempt only frees its reserved port.
  void HandleCancel(const v1::Cancel& cancel);

  // Stops every attempt that still has a running worker as HandleCancel
  // does, with `reason` in the log, and frees every reserved port: the agent
  // lost the coordinator for longer than its node timeout. Returns how many
  // attempts it began to stop (0 when none runs or all are stopping already).
  int FenceAll(absl::string_view reason);

  // Forgets acknowledged events (and persists each rank's acked seq) and
  // notes acknowledged exits.
  void HandleAcks(const v1::Acks& acks);

  // Reaps or polls workers, escalates cancels, reads new event lines, and
  // marks ranks done (writing their done file). Returns the new events, then
  // a WorkerExited for each rank that ended and whose events were all read.
  std::vector<v1::AgentMessage> Poll();

  // After a (re)connection: every unacknowledged event, then the
  // WorkerExited of each reported rank whose exit is not acknowledged, and
  // of each refused rank whose refusal is not. ResendOverdue counts its
  // wait from then.
  std::vector<v1::AgentMessage> Resend();

  // On a live stream: what Resend() gives, when something sent waits for
  // an acknowledgement and ResendClock says it is due (none came: the
  // coordinator could not store it, a full disk); empty otherwise.
  std::vector<v1::AgentMessage> ResendOverdue();

  // The attempts with ranks not done (for Register): `ranks` are those whose
  // worker still runs, `exited_ranks` those that ended and whose exit the
  // coordinator has not acknowledged yet (it follows the Register), refused
  // ranks among them.
  std::vector<v1::RunningAttempt> Running() const;

  // Attempts still kept (running or not yet fully delivered).
  size_t attempt_count() const { return attempts_.size(); }

 private:
  // PHASE_START: plans, makes the attempt's folders and dispatches to the
  // attempt's launch path. Returns the refusals.
  std::vector<v1::AgentMessage> Start(const v1::Assignment& a);
  // Makes the attempt's folders, links in the checkpoint it resumes from
  // and grants its lease. The error refuses the start.
  absl::Status PrepareFolders(const v1::AttemptKey& key,
                              const AttemptPlan& plan);
  // The per-rank path: each rank its own process (rank_processes.h).
  std::vector<v1::AgentMessage> StartRanks(const v1::Assignment& a,
                                           AttemptPlan& plan);
  // The launcher path: one mpirun or srun for every node
  // (launcher_runs.h).
  std::vector<v1::AgentMessage> StartLauncherRun(const v1::Assignment& a,
                                                 Launcher launcher,
                                                 const AttemptPlan& plan);
  // Refuses the ranks of `plan` from index `first` on, which did not start:
  // that one with `error`, the rest as not started because of it.
  std::vector<v1::AgentMessage> RefuseUnstarted(const v1::AttemptKey& key,
                                                const AttemptPlan& plan,
                                                size_t first,
                                                absl::string_view error);
  // Keeps a started attempt; when only some of its ranks started, the
  // others are stopped (the attempt cannot run without them).
  void KeepStarted(SupervisedAttempt attempt, bool partial);

  // Takes up the ranks of one attempt folder; returns how many.
  int ReattachAttempt(const AttemptFolder& folder);
  // The state of rank `rank_id` in a folder of an earlier agent, or nullopt
  // when it is done. `followed`: a launcher run's rank.
  std::optional<SupervisedRank> ReattachRank(SupervisedAttempt& attempt,
                                             int rank_id, bool followed);

  // SIGTERM to the attempt's running workers; SIGKILL follows in Poll.
  void Stop(SupervisedAttempt& attempt, absl::string_view reason);
  // The kept rank `rank` of attempt `key`, or null.
  SupervisedRank* FindRank(const v1::AttemptKey& key, int rank);
  // Notes whether a rank's worker ended; `found` as FindUnfoundRanks gave.
  void CheckExit(SupervisedAttempt& attempt, SupervisedRank& rank,
                 const std::map<std::string, pid_t>& found);
  // SIGKILL to a rank that outlived a cancel's grace period.
  void KillWhenOverdue(const SupervisedAttempt& attempt, SupervisedRank& rank);
  // Reports a rank that ended once its events are all read and it may be
  // reported (recording the exit in its exit file); nullopt until then.
  std::optional<v1::AgentMessage> ReportWhenEnded(SupervisedAttempt& attempt,
                                                  SupervisedRank& rank);

  // Constant after construction.
  const SupervisorOptions options_;
  ProcessLauncher* const processes_;
  Clock* const clock_;
  LauncherRuns launcher_runs_;  // borrows options_

  std::map<AttemptId, SupervisedAttempt> attempts_;
  Refusals refusals_;
  PortReservations reservations_;
  ResendClock resend_;  // when ResendOverdue sends again
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_SUPERVISOR_H_
