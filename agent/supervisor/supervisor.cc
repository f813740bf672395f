// The Supervisor: assignments dispatched to a launch path, every kept
// attempt polled, acknowledgements taken, and what the coordinator lacks
// sent again.
#include "agent/supervisor/supervisor.h"

#include <signal.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_checkpoints.h"
#include "agent/attempts/attempt_layout.h"
#include "agent/attempts/where.h"
#include "agent/supervisor/rank_processes.h"
#include "agent/system/files.h"
#include "common/log.h"
#include "methodology/spec.h"

namespace hpcai500::agent {
namespace {

// The events in batches, then `exits`: the order the coordinator takes them.
std::vector<v1::AgentMessage> EventsThenExits(
    std::vector<v1::Event> events, std::vector<v1::AgentMessage> exits) {
  std::vector<v1::AgentMessage> out = BatchEvents(std::move(events));
  std::move(exits.begin(), exits.end(), std::back_inserter(out));
  return out;
}

}  // namespace

Supervisor::Supervisor(SupervisorOptions options, ProcessLauncher* processes,
                       Clock* clock)
    : options_(std::move(options)),
      processes_(processes),
      clock_(clock),
      launcher_runs_(&options_.node, &options_.launchers, processes, clock),
      reservations_(options_.address, options_.node.checkpoint_root) {}

Supervisor::~Supervisor() = default;

int Supervisor::Reattach() {
  int taken = 0;
  for (const AttemptFolder& folder :
       FindAttemptFolders(options_.node.workdir)) {
    taken += ReattachAttempt(folder);
  }
  return taken;
}

int Supervisor::ReattachAttempt(const AttemptFolder& folder) {
  AttemptPlan folders;
  folders.dir = AttemptLayout(options_.node.workdir).AttemptDir(folder.key);
  folders.checkpoint_dir =
      AttemptLayout::CheckpointDir(options_.node.checkpoint_root, folder.key);
  SupervisedAttempt attempt = NewAttempt(folder.key, folders, Launcher::kAgent);
  // A launcher run's ranks: those it followed, found or not.
  const std::optional<FollowedRanks> followed =
      launcher_runs_.Reattach(attempt);
  std::set<int> rank_ids = folder.ranks_with_pid_files;
  if (followed) rank_ids.insert(followed->ranks.begin(), followed->ranks.end());
  int taken = 0;
  for (const int rank_id : rank_ids) {
    std::optional<SupervisedRank> rank =
        ReattachRank(attempt, rank_id, followed.has_value());
    if (!rank) continue;
    attempt.ranks.push_back(*std::move(rank));
    ++taken;
  }
  // A launcher that outlives its ranks is still stopped on cancel.
  if (!attempt.ranks.empty() || attempt.launch_running()) {
    attempts_.emplace(IdOf(folder.key), std::move(attempt));
  }
  return taken;
}

std::optional<SupervisedRank> Supervisor::ReattachRank(
    SupervisedAttempt& attempt, int rank_id, bool followed) {
  const v1::AttemptKey& key = attempt.key;
  RankPlan paths = RankPaths(attempt.dir, rank_id);
  if (FileExists(paths.done_path)) return std::nullopt;
  SupervisedRank rank = NewRank(key, std::move(paths));
  rank.followed = followed;
  if (absl::Status loaded = rank.tailer->LoadAcked(); !loaded.ok()) {
    LogWarning(absl::StrCat(Where(key, rank_id), ": ", loaded.message(),
                            "; resending every event"));
  }
  absl::StatusOr<ExitRecord> exit = ReadExitFile(rank.paths.exit_path);
  absl::StatusOr<PidRecord> pid = ReadPidFile(rank.paths.pid_path);
  if (pid.ok()) rank.process = *pid;
  if (exit.ok()) {
    // Reported before the restart but not acknowledged (no done file):
    // reported again after reconnecting, until it is.
    rank.exit = *exit;
    rank.report = ReportExit(attempt, rank);
  } else if (pid.ok() && IsSameProcessRunning(*pid, *processes_)) {
    rank.running = true;
    LogInfo(absl::StrCat(Where(key, rank_id), ": reattached to worker pid ",
                         pid->pid));
  } else if (rank.followed && absl::IsNotFound(pid.status())) {
    // Its launcher had not started it yet: looked for again.
    rank.running = true;
    LogInfo(absl::StrCat(Where(key, rank_id), ": following again (",
                         std::string(Name(attempt.launcher)),
                         " had not started it yet)"));
  } else {
    rank.ended_ms = clock_->NowMs();
    LogWarning(absl::StrCat(Where(key, rank_id),
                            ": worker ended while the agent was down"));
  }
  return rank;
}

std::vector<v1::AgentMessage> Supervisor::HandleAssignment(
    const v1::Assignment& a) {
  if (a.phase() == v1::Assignment::PHASE_RESERVE) {
    return {reservations_.Reserve(a)};
  }
  if (a.phase() == v1::Assignment::PHASE_START) return Start(a);
  LogError(
      absl::StrCat(Where(a.key()), ": assignment without a phase refused"));
  return {refusals_.Refuse(
      a.key(), a.ranks_size() > 0 ? a.ranks(0) : 0,
      "assignment: phase: must be PHASE_RESERVE or PHASE_START")};
}

std::vector<v1::AgentMessage> Supervisor::Start(const v1::Assignment& a) {
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, options_.node);
  if (!plan.ok()) {
    LogError(
        absl::StrCat(Where(a.key()), ": refused: ", plan.status().message()));
    return refusals_.RefuseAll(a, plan.status().message());
  }
  if (attempts_.count(IdOf(a.key())) > 0) {
    LogWarning(absl::StrCat(Where(a.key()),
                            ": already running; repeated start ignored"));
    return {};
  }
  if (absl::Status made = PrepareFolders(a.key(), *plan); !made.ok()) {
    return refusals_.RefuseAll(a, made.message());
  }
  // Checked by PlanAttempt.
  const Launcher launcher = *ParseLauncher("launcher", a.spec().launcher());
  if (launcher != Launcher::kAgent) {
    return StartLauncherRun(a, launcher, *plan);
  }
  return StartRanks(a, *plan);
}

absl::Status Supervisor::PrepareFolders(const v1::AttemptKey& key,
                                        const AttemptPlan& plan) {
  for (const std::string& dir : {plan.dir, plan.checkpoint_dir}) {
    if (absl::Status made = MakeDirectories(dir); !made.ok()) {
      LogError(absl::StrCat(Where(key), ": ", made.message()));
      return made;
    }
  }
  LinkResumeSource(key, plan);
  if (options_.leases != nullptr) options_.leases->Grant(key, plan.dir);
  return absl::OkStatus();
}

std::vector<v1::AgentMessage> Supervisor::StartRanks(const v1::Assignment& a,
                                                     AttemptPlan& plan) {
  // Rank 0's worker binds the reserved port: free it just before.
  reservations_.Release(a.key());
  SupervisedAttempt attempt = NewAttempt(a.key(), plan, Launcher::kAgent);
  const absl::Status started =
      StartRankProcesses(a, plan, *processes_, attempt);
  std::vector<v1::AgentMessage> refused;
  if (!started.ok()) {
    refused =
        RefuseUnstarted(a.key(), plan, attempt.ranks.size(), started.message());
  }
  KeepStarted(std::move(attempt), /*partial=*/!started.ok());
  return refused;
}

std::vector<v1::AgentMessage> Supervisor::RefuseUnstarted(
    const v1::AttemptKey& key, const AttemptPlan& plan, size_t first,
    absl::string_view error) {
  std::vector<v1::AgentMessage> refused;
  const int failed = plan.ranks[first].rank;
  for (size_t i = first; i < plan.ranks.size(); ++i) {
    refused.push_back(refusals_.Refuse(
        key, plan.ranks[i].rank,
        i == first
            ? std::string(error)
            : absl::StrCat("not started: rank ", failed, " could not start")));
  }
  return refused;
}

void Supervisor::KeepStarted(SupervisedAttempt attempt, bool partial) {
  if (attempt.ranks.empty()) return;
  auto kept = attempts_.emplace(IdOf(attempt.key), std::move(attempt)).first;
  if (partial) Stop(kept->second, "a rank of this node could not start");
}

std::vector<v1::AgentMessage> Supervisor::StartLauncherRun(
    const v1::Assignment& a, Launcher launcher, const AttemptPlan& plan) {
  absl::StatusOr<SupervisedAttempt> attempt = launcher_runs_.Start(
      a, launcher, plan,
      /*before_launch=*/[&] { reservations_.Release(a.key()); });
  if (!attempt.ok()) {
    LogError(absl::StrCat(Where(a.key()), ": ", attempt.status().message()));
    return refusals_.RefuseAll(a, attempt.status().message());
  }
  attempts_.emplace(IdOf(a.key()), *std::move(attempt));
  return {};
}

void Supervisor::Stop(SupervisedAttempt& attempt, absl::string_view reason) {
  if (attempt.cancelling) return;
  attempt.cancelling = true;
  attempt.kill_deadline_ms = clock_->NowMs() + options_.kill_grace_ms;
  LogInfo(absl::StrCat(Where(attempt.key), ": cancelling (", reason,
                       "): SIGTERM to its workers"));
  if (attempt.launch) attempt.launch->Signal(SIGTERM);
  for (SupervisedRank& rank : attempt.ranks) {
    if (rank.running) SignalRank(rank, SIGTERM, *processes_);
  }
}

void Supervisor::HandleCancel(const v1::Cancel& cancel) {
  reservations_.Release(cancel.key());
  auto it = attempts_.find(IdOf(cancel.key()));
  if (it == attempts_.end()) {
    LogInfo(absl::StrCat(Where(cancel.key()),
                         ": cancel for an attempt not running here"));
    return;
  }
  Stop(it->second, cancel.reason());
}

int Supervisor::FenceAll(absl::string_view reason) {
  reservations_.ReleaseAll();
  int stopped = 0;
  for (auto& [id, attempt] : attempts_) {
    const bool runs =
        std::any_of(attempt.ranks.begin(), attempt.ranks.end(),
                    [](const SupervisedRank& rank) { return rank.running; });
    if (attempt.cancelling || !runs) continue;
    Stop(attempt, reason);
    ++stopped;
  }
  return stopped;
}

SupervisedRank* Supervisor::FindRank(const v1::AttemptKey& key, int rank) {
  auto it = attempts_.find(IdOf(key));
  if (it == attempts_.end()) return nullptr;
  for (SupervisedRank& kept : it->second.ranks) {
    if (kept.paths.rank == rank) return &kept;
  }
  return nullptr;
}

void Supervisor::HandleAcks(const v1::Acks& acks) {
  if (acks.acks_size() > 0 || acks.exits_size() > 0) {
    resend_.NoteProgress(clock_->NowMs());
  }
  for (const v1::Ack& ack : acks.acks()) {
    if (SupervisedRank* rank = FindRank(ack.key(), ack.rank())) {
      rank->tailer->Ack(ack.seq());
    }
  }
  for (const v1::ExitAck& ack : acks.exits()) {
    refusals_.Acknowledge(ack);
    SupervisedRank* rank = FindRank(ack.key(), ack.rank());
    // Only an exit this agent reported can have been stored.
    if (rank != nullptr && rank->report) rank->exit_acked = true;
  }
}

void Supervisor::CheckExit(SupervisedAttempt& attempt, SupervisedRank& rank,
                           const std::map<std::string, pid_t>& found) {
  if (!rank.running) return;
  if (rank.followed) {
    launcher_runs_.CheckFollowed(attempt, rank, found);
  } else {
    CheckRankProcess(rank, *processes_);
  }
}

void Supervisor::KillWhenOverdue(const SupervisedAttempt& attempt,
                                 SupervisedRank& rank) {
  if (!attempt.cancelling || !rank.running || rank.killed ||
      rank.process.pid <= 0 || clock_->NowMs() < attempt.kill_deadline_ms) {
    return;
  }
  LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": worker pid ",
                          rank.process.pid,
                          " outlived the grace period: SIGKILL"));
  SignalRank(rank, SIGKILL, *processes_);
  rank.killed = true;
}

std::optional<v1::AgentMessage> Supervisor::ReportWhenEnded(
    SupervisedAttempt& attempt, SupervisedRank& rank) {
  if (rank.running || rank.report || !rank.tailer->caught_up() ||
      (rank.followed && !launcher_runs_.ReadyToReport(attempt, rank))) {
    return std::nullopt;
  }
  rank.report = ReportExit(attempt, rank);
  if (absl::Status written = WriteExitFile(rank.paths.exit_path, *rank.exit);
      !written.ok()) {
    LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": ",
                            written.message()));
  }
  LogInfo(absl::StrCat(Where(attempt.key, rank.paths.rank), ": worker pid ",
                       rank.process.pid, " ended: ", DescribeExit(*rank.exit)));
  return ExitedMessage(*rank.report);
}

std::vector<v1::AgentMessage> Supervisor::Poll() {
  std::vector<v1::Event> events;
  std::vector<v1::AgentMessage> exits;
  const std::map<std::string, pid_t> found =
      launcher_runs_.FindUnfoundRanks(attempts_);
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    SupervisedAttempt& attempt = it->second;
    launcher_runs_.CheckLaunch(attempt);
    bool all_done = !attempt.launch_running();
    for (SupervisedRank& rank : attempt.ranks) {
      CheckExit(attempt, rank, found);
      KillWhenOverdue(attempt, rank);
      std::vector<v1::Event> fresh = rank.tailer->ReadNew();
      std::move(fresh.begin(), fresh.end(), std::back_inserter(events));
      if (std::optional<v1::AgentMessage> exited =
              ReportWhenEnded(attempt, rank)) {
        exits.push_back(*std::move(exited));
      }
      MarkDoneWhenDelivered(attempt, rank);
      all_done = all_done && rank.done;
    }
    it = all_done ? attempts_.erase(it) : std::next(it);
  }
  refusals_.AppendTo(exits);
  return EventsThenExits(std::move(events), std::move(exits));
}

std::vector<v1::AgentMessage> Supervisor::Resend() {
  resend_.NoteSent(clock_->NowMs());
  std::vector<v1::Event> events;
  std::vector<v1::AgentMessage> exits;
  for (const auto& [id, attempt] : attempts_) {
    for (const SupervisedRank& rank : attempt.ranks) {
      std::vector<v1::Event> unacked = rank.tailer->Unacked();
      std::move(unacked.begin(), unacked.end(), std::back_inserter(events));
      if (rank.report && !rank.exit_acked) {
        exits.push_back(ExitedMessage(*rank.report));
      }
    }
  }
  refusals_.AppendTo(exits);
  return EventsThenExits(std::move(events), std::move(exits));
}

std::vector<v1::AgentMessage> Supervisor::ResendOverdue() {
  bool waiting = false;
  for (const auto& [id, attempt] : attempts_) {
    for (const SupervisedRank& rank : attempt.ranks) {
      waiting = waiting || !rank.tailer->all_acked() ||
                (rank.report && !rank.exit_acked);
    }
  }
  if (!resend_.Due(waiting, clock_->NowMs())) return {};
  return Resend();
}

std::vector<v1::RunningAttempt> Supervisor::Running() const {
  std::vector<v1::RunningAttempt> running;
  for (const auto& [id, attempt] : attempts_) {
    v1::RunningAttempt entry;
    *entry.mutable_key() = attempt.key;
    for (const SupervisedRank& rank : attempt.ranks) {
      if (rank.done) continue;
      if (rank.running) {
        entry.add_ranks(rank.paths.rank);
      } else {
        entry.add_exited_ranks(rank.paths.rank);
      }
    }
    if (entry.ranks_size() > 0 || entry.exited_ranks_size() > 0) {
      running.push_back(std::move(entry));
    }
  }
  // A refused rank's exit follows the Register too (Resend).
  refusals_.AddExitedRanks(running);
  return running;
}

}  // namespace hpcai500::agent
