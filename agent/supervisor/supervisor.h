// Supervisor is the agent's logic without the network: it turns assignments
// into worker processes, tails their event files, reaps or polls them, kills
// them on cancel (or when the agent fences itself), and produces the messages
// for the coordinator. A rank is done once its exit was reported and
// acknowledged and every event acknowledged; an attempt is kept until all its
// ranks are done, and the attempts of an earlier agent are found in the
// workdir again.
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

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/attempts/event_tailer.h"
#include "agent/attempts/pid_file.h"
#include "agent/attempts/worker_leases.h"
#include "agent/launch/assignment.h"
#include "agent/launch/launch_process.h"
#include "agent/launch/launcher.h"
#include "agent/launch/port_reservation.h"
#include "agent/supervisor/delivery.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// A rank of a launcher run that ended without a final state (no run_stop
// event) is reported only once its launch's outcome can be known: on rank
// 0's node this long after mpirun or srun ended (an agent stopping with its
// Slurm allocation is gone by then and reports nothing); on the other nodes
// this long after the rank ended, so that rank 0's node reports a cancelled
// step first.
inline constexpr int64_t kLauncherSettleMs = 2000;
inline constexpr int64_t kFollowerSettleMs = 5000;

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
  using Key = std::pair<int64_t, int>;

  struct Rank {
    RankPlan paths;  // rank, local rank, files
    PidRecord process;
    bool is_child = false;  // started by this agent (waitpid) or reattached
    // Started by a launcher; process.pid is 0 until it is found.
    bool followed = false;
    int64_t ended_ms = 0;  // when a followed rank was seen ended
    bool running = false;
    bool killed = false;             // SIGKILL sent after the grace period
    std::optional<ExitRecord> exit;  // unset for a reattached worker until
                                     // derived from its events
    std::optional<v1::WorkerExited> report;  // set once reported
    bool exit_acked = false;  // the coordinator stored the report
    bool done = false;        // exit acknowledged and every event acknowledged
    std::unique_ptr<EventTailer> tailer;
  };

  struct Attempt {
    v1::AttemptKey key;
    std::string dir;
    std::string checkpoint_dir;
    std::vector<Rank> ranks;
    bool cancelling = false;
    int64_t kill_deadline_ms = 0;
    // A launcher run: the launcher, and on rank 0's node its process.
    Launcher launcher = Launcher::kAgent;
    std::optional<LaunchProcess> launch;

    bool launch_running() const { return launch && launch->running(); }
  };

  static Key KeyOf(const v1::AttemptKey& key) {
    return {key.run_id(), key.attempt()};
  }
  std::vector<v1::AgentMessage> Start(const v1::Assignment& a);
  // The WorkerExited that refuses rank `rank` of attempt `key` with
  // `error`, kept until the coordinator acknowledges it (Resend, Running).
  v1::AgentMessage Refuse(const v1::AttemptKey& key, int rank,
                          absl::string_view error);
  // Start of a launcher run: the attempt's ranks to follow, and on rank 0's
  // node the launcher. Returns the refusals, like Start.
  std::vector<v1::AgentMessage> StartLauncherRun(const v1::Assignment& a,
                                                 Launcher launcher,
                                                 const AttemptPlan& plan);
  // Reattach of a launcher run's attempt folder: its launcher and the ranks
  // this node follows (kFollowedRanksFile), and on rank 0's node the
  // launcher (LaunchProcess::Reattach). nullopt for an attempt the agent
  // started itself.
  std::optional<FollowedRanks> ReattachLaunch(Attempt& attempt);
  // The processes of the followed ranks not found yet, by events path: one
  // look at every process per Poll for all of them (none when no rank is
  // looked for).
  std::map<std::string, pid_t> FindUnfoundRanks();
  // Finds a followed rank's process (among `found`), or notes that it ended.
  void CheckFollowed(Attempt& attempt, Rank& rank,
                     const std::map<std::string, pid_t>& found);
  // Whether an ended rank's exit can be reported now (see
  // kLauncherSettleMs).
  bool ReadyToReport(const Attempt& attempt, const Rank& rank) const;
  // Signals a running rank: its group, and a followed rank itself too.
  void SignalRank(const Rank& rank, int sig);
  // SIGTERM to the attempt's running workers; SIGKILL follows in Poll.
  void Stop(Attempt& attempt, absl::string_view reason);
  // The kept rank `rank` of attempt `key`, or null.
  Rank* FindRank(const v1::AttemptKey& key, int rank);
  // Notes whether a rank's worker ended; `found` as FindUnfoundRanks gave.
  void CheckExit(Attempt& attempt, Rank& rank,
                 const std::map<std::string, pid_t>& found);
  v1::WorkerExited ReportExit(Attempt& attempt, Rank& rank);
  // Marks a reported rank done once its exit and events are acknowledged;
  // rank 0's success removes the attempt's checkpoints first.
  void MarkDoneWhenDelivered(Attempt& attempt, Rank& rank);

  // Constant after construction.
  const SupervisorOptions options_;
  ProcessLauncher* const processes_;
  Clock* const clock_;

  std::map<Key, Attempt> attempts_;
  // Refused ranks (run, attempt, rank) whose WorkerExited the coordinator
  // has not acknowledged: listed as exited in Running() and sent again by
  // Resend(), so a refusal survives a broken stream.
  std::map<std::tuple<int64_t, int32_t, int32_t>, v1::WorkerExited> refused_;
  std::map<Key, PortReservation> reservations_;
  ResendClock resend_;  // when ResendOverdue sends again
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_SUPERVISOR_H_
