// What the Supervisor keeps of an attempt on this node, however its ranks
// were started (each its own process, agent/supervisor/rank_processes.h, or
// by one mpirun or srun, agent/supervisor/launcher_runs.h): each rank's
// files, its process, the events read from it and how far its exit and
// events were delivered. A rank is done once its exit was reported and
// acknowledged and every event acknowledged.
//
// Not thread-safe: the Supervisor's thread drives them.
#ifndef HPCAI500_AGENT_SUPERVISOR_SUPERVISED_ATTEMPT_H_
#define HPCAI500_AGENT_SUPERVISOR_SUPERVISED_ATTEMPT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/attempts/attempt_plan.h"
#include "agent/attempts/event_tailer.h"
#include "agent/attempts/pid_file.h"
#include "agent/launch/launch_process.h"
#include "agent/system/process.h"
#include "common/vocabulary.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// An attempt as the Supervisor's map is keyed: (run id, attempt).
using AttemptId = std::pair<int64_t, int>;
inline AttemptId IdOf(const v1::AttemptKey& key) {
  return {key.run_id(), key.attempt()};
}

struct SupervisedRank {
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
  bool exit_acked = false;                 // the coordinator stored the report
  bool done = false;  // exit acknowledged and every event acknowledged
  std::unique_ptr<EventTailer> tailer;
};

struct SupervisedAttempt {
  v1::AttemptKey key;
  std::string dir;
  std::string checkpoint_dir;
  std::vector<SupervisedRank> ranks;
  bool cancelling = false;
  int64_t kill_deadline_ms = 0;
  // A launcher run: the launcher, and on rank 0's node its process.
  Launcher launcher = Launcher::kAgent;
  std::optional<LaunchProcess> launch;

  bool launch_running() const { return launch && launch->running(); }
};

// An attempt of `launcher` in `plan`'s folders, with no ranks yet.
SupervisedAttempt NewAttempt(const v1::AttemptKey& key, const AttemptPlan& plan,
                             Launcher launcher);

// A rank of attempt `key` with `paths`, its event file followed from the
// start; no process yet.
SupervisedRank NewRank(const v1::AttemptKey& key, RankPlan paths);

// Writes rank.process to the rank's pid file; one that cannot be written is
// logged (the rank is then not taken up again after an agent restart).
void RecordPid(const v1::AttemptKey& key, const SupervisedRank& rank);

// `sig` to a running rank: its group, and a followed or reattached rank
// itself too (it need not lead a group). Nothing for a followed rank not
// found yet.
void SignalRank(const SupervisedRank& rank, int sig,
                ProcessLauncher& processes);

// The WorkerExited of a rank that ended. A rank that is not the agent's
// child gets its exit from its events first: their final state, else the
// scheduler's cancel, the agent's stop or kWorkerLostError. The stderr tail
// is the worker's, or for a followed rank its launcher's (on rank 0's
// node).
v1::WorkerExited ReportExit(SupervisedAttempt& attempt, SupervisedRank& rank);

// "exit code N" or "killed by signal N", with the error after it.
std::string DescribeExit(const ExitRecord& exit);

// Marks a reported rank done (its done file written) once its exit and
// events are acknowledged; rank 0's success removes the attempt's
// checkpoints first.
void MarkDoneWhenDelivered(const SupervisedAttempt& attempt,
                           SupervisedRank& rank);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_SUPERVISED_ATTEMPT_H_
