// The Supervisor: assignments into worker processes or launcher runs, their
// events and exits into messages, acknowledgements taken.
#include "agent/supervisor/supervisor.h"

#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_checkpoints.h"
#include "agent/attempts/attempt_layout.h"
#include "agent/attempts/where.h"
#include "agent/system/files.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/spec.h"

namespace hpcai500::agent {

namespace {

v1::AgentMessage WorkerExitedError(const v1::AttemptKey& key, int rank,
                                   absl::string_view error) {
  v1::AgentMessage message;
  v1::WorkerExited* exited = message.mutable_worker_exited();
  *exited->mutable_key() = key;
  exited->set_rank(rank);
  exited->set_exit_code(-1);
  exited->set_error(std::string(error));
  return message;
}

bool Succeeded(const ExitRecord& exit) {
  return exit.status.exit_code == 0 && exit.status.signal == 0;
}

std::string DescribeExit(const ExitRecord& exit) {
  std::string text = exit.status.signal != 0
                         ? absl::StrCat("killed by signal ", exit.status.signal)
                         : absl::StrCat("exit code ", exit.status.exit_code);
  if (!exit.error.empty()) absl::StrAppend(&text, " (", exit.error, ")");
  return text;
}

// The reason the site's scheduler gave for stopping a launch (a scancelled
// Slurm step), or "" when it did not stop it or there is none.
std::string SchedulerCancelled(const std::optional<LaunchProcess>& launch) {
  return launch && launch->end() ? launch->end()->cancelled : "";
}

}  // namespace

Supervisor::Supervisor(SupervisorOptions options, ProcessLauncher* processes,
                       Clock* clock)
    : options_(std::move(options)), processes_(processes), clock_(clock) {}

Supervisor::~Supervisor() = default;

int Supervisor::Reattach() {
  namespace fs = std::filesystem;
  const AttemptLayout layout(options_.node.workdir);
  const fs::path runs = layout.RunsDir();
  std::error_code ec;
  if (!fs::is_directory(runs, ec)) return 0;
  int taken = 0;
  for (const fs::directory_entry& run_dir : fs::directory_iterator(runs, ec)) {
    std::optional<int64_t> run_id =
        AttemptLayout::ParseRunDirName(run_dir.path().filename().string());
    if (!run_id || !run_dir.is_directory(ec)) continue;
    for (const fs::directory_entry& attempt_dir :
         fs::directory_iterator(run_dir.path(), ec)) {
      std::optional<int> number = AttemptLayout::ParseAttemptDirName(
          attempt_dir.path().filename().string());
      if (!number) continue;
      v1::AttemptKey key;
      key.set_run_id(*run_id);
      key.set_attempt(*number);
      Attempt attempt;
      attempt.key = key;
      attempt.dir = layout.AttemptDir(key);
      attempt.checkpoint_dir =
          AttemptLayout::CheckpointDir(options_.node.checkpoint_root, key);
      // A launcher run's ranks: those it followed, found or not.
      const std::optional<FollowedRanks> followed = ReattachLaunch(attempt);
      std::set<int> rank_ids;
      if (followed)
        rank_ids.insert(followed->ranks.begin(), followed->ranks.end());
      for (const fs::directory_entry& file :
           fs::directory_iterator(attempt_dir.path(), ec)) {
        if (std::optional<int> rank_number = AttemptLayout::ParseRankFileName(
                file.path().filename().string(), RankFile::kPid)) {
          rank_ids.insert(*rank_number);
        }
      }
      for (const int rank_id : rank_ids) {
        Rank rank;
        rank.paths = RankPaths(attempt.dir, rank_id);
        if (FileExists(rank.paths.done_path)) continue;
        rank.followed = followed.has_value();
        rank.tailer = std::make_unique<EventTailer>(
            rank.paths.events_path, rank.paths.acked_path, key, rank_id);
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
          LogInfo(absl::StrCat(Where(key, rank_id),
                               ": reattached to worker pid ", pid->pid));
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
        attempt.ranks.push_back(std::move(rank));
        ++taken;
      }
      // A launcher that outlives its ranks is still stopped on cancel.
      if (!attempt.ranks.empty() || attempt.launch_running()) {
        attempts_.emplace(KeyOf(key), std::move(attempt));
      }
    }
  }
  return taken;
}

std::optional<FollowedRanks> Supervisor::ReattachLaunch(Attempt& attempt) {
  const std::string dir = attempt.dir + "/";
  absl::StatusOr<std::string> text = ReadFileToString(dir + kFollowedRanksFile);
  if (!text.ok()) {
    if (!absl::IsNotFound(text.status())) {
      LogWarning(
          absl::StrCat(Where(attempt.key), ": ", text.status().message()));
    }
    return std::nullopt;
  }
  absl::StatusOr<FollowedRanks> followed = ParseFollowedRanks(*text);
  if (!followed.ok()) {
    LogWarning(absl::StrCat(Where(attempt.key), ": ",
                            followed.status().message(), " in ", dir));
    return std::nullopt;
  }
  attempt.launcher = followed->launcher;
  attempt.launch.emplace(attempt.launcher, attempt.key, attempt.dir, processes_,
                         clock_);
  if (!attempt.launch->Reattach()) attempt.launch.reset();
  return *std::move(followed);
}

std::vector<v1::AgentMessage> Supervisor::HandleAssignment(
    const v1::Assignment& a) {
  if (a.phase() == v1::Assignment::PHASE_RESERVE) {
    v1::AgentMessage reply;
    v1::PortReserved* reserved = reply.mutable_port_reserved();
    *reserved->mutable_key() = a.key();
    reserved->set_host(options_.address);
    if (absl::Status valid = ValidateAttemptKey(a.key()); !valid.ok()) {
      reserved->set_error(std::string(valid.message()));
      LogError(absl::StrCat("refused port reservation: ", valid.message()));
      return {reply};
    }
    AddFoundCheckpoints(options_.node.checkpoint_root, a, reserved);
    auto existing = reservations_.find(KeyOf(a.key()));
    if (existing != reservations_.end()) {
      reserved->set_port(existing->second.port());
      return {reply};
    }
    absl::StatusOr<PortReservation> port =
        PortReservation::Reserve(options_.address);
    if (!port.ok()) {
      reserved->set_error(std::string(port.status().message()));
      LogError(absl::StrCat(Where(a.key()), ": ", port.status().message()));
      return {reply};
    }
    reserved->set_port(port->port());
    LogInfo(absl::StrCat(Where(a.key()), ": reserved rendezvous port ",
                         port->port(), " on ", options_.address));
    reservations_.emplace(KeyOf(a.key()), *std::move(port));
    return {reply};
  }
  if (a.phase() == v1::Assignment::PHASE_START) return Start(a);
  LogError(
      absl::StrCat(Where(a.key()), ": assignment without a phase refused"));
  return {Refuse(a.key(), a.ranks_size() > 0 ? a.ranks(0) : 0,
                 "assignment: phase: must be PHASE_RESERVE or PHASE_START")};
}

v1::AgentMessage Supervisor::Refuse(const v1::AttemptKey& key, int rank,
                                    absl::string_view error) {
  v1::AgentMessage message = WorkerExitedError(key, rank, error);
  refused_[{key.run_id(), key.attempt(), rank}] = message.worker_exited();
  return message;
}

std::vector<v1::AgentMessage> Supervisor::Start(const v1::Assignment& a) {
  std::vector<v1::AgentMessage> replies;
  auto refuse_all = [&](absl::string_view error) {
    if (a.ranks().empty()) replies.push_back(Refuse(a.key(), 0, error));
    for (int rank : a.ranks()) {
      replies.push_back(Refuse(a.key(), rank, error));
    }
    return replies;
  };
  absl::StatusOr<AttemptPlan> plan = PlanAttempt(a, options_.node);
  if (!plan.ok()) {
    LogError(
        absl::StrCat(Where(a.key()), ": refused: ", plan.status().message()));
    return refuse_all(plan.status().message());
  }
  if (attempts_.count(KeyOf(a.key())) > 0) {
    LogWarning(absl::StrCat(Where(a.key()),
                            ": already running; repeated start ignored"));
    return {};
  }
  for (const std::string& dir : {plan->dir, plan->checkpoint_dir}) {
    if (absl::Status made = MakeDirectories(dir); !made.ok()) {
      LogError(absl::StrCat(Where(a.key()), ": ", made.message()));
      return refuse_all(made.message());
    }
  }
  LinkResumeSource(a.key(), *plan);
  if (options_.leases != nullptr) options_.leases->Grant(a.key(), plan->dir);
  // Checked by PlanAttempt.
  const Launcher launcher = *ParseLauncher("launcher", a.spec().launcher());
  if (launcher != Launcher::kAgent) {
    return StartLauncherRun(a, launcher, *plan);
  }
  // Rank 0's worker binds the reserved port: free it just before.
  reservations_.erase(KeyOf(a.key()));

  Attempt attempt;
  attempt.key = a.key();
  attempt.dir = plan->dir;
  attempt.checkpoint_dir = plan->checkpoint_dir;
  for (size_t i = 0; i < plan->ranks.size(); ++i) {
    RankPlan& rank_plan = plan->ranks[i];
    absl::StatusOr<pid_t> pid = processes_->Launch(rank_plan.launch);
    if (!pid.ok()) {
      LogError(absl::StrCat(Where(a.key(), rank_plan.rank),
                            ": cannot start worker: ", pid.status().message()));
      for (size_t j = i; j < plan->ranks.size(); ++j) {
        replies.push_back(
            Refuse(a.key(), plan->ranks[j].rank,
                   j == i ? std::string(pid.status().message())
                          : absl::StrCat("not started: rank ", rank_plan.rank,
                                         " could not start")));
      }
      break;
    }
    Rank rank;
    rank.process.pid = *pid;
    rank.process.start_time = processes_->StartTime(*pid).value_or(0);
    rank.is_child = true;
    rank.running = true;
    rank.tailer = std::make_unique<EventTailer>(
        rank_plan.events_path, rank_plan.acked_path, a.key(), rank_plan.rank);
    if (absl::Status written = WritePidFile(rank_plan.pid_path, rank.process);
        !written.ok()) {
      LogWarning(absl::StrCat(Where(a.key(), rank_plan.rank), ": ",
                              written.message(),
                              " (no reattach after an agent restart)"));
    }
    LogInfo(absl::StrCat(
        Where(a.key(), rank_plan.rank), ": started worker pid ", *pid,
        " local_rank=", rank_plan.local_rank, " world_size=", a.world_size()));
    rank.paths = std::move(rank_plan);
    attempt.ranks.push_back(std::move(rank));
  }
  const bool partial = attempt.ranks.size() < plan->ranks.size();
  if (!attempt.ranks.empty()) {
    attempts_.emplace(KeyOf(a.key()), std::move(attempt));
    if (partial) {
      v1::Cancel cancel;
      *cancel.mutable_key() = a.key();
      cancel.set_reason("a rank of this node could not start");
      HandleCancel(cancel);
    }
  }
  return replies;
}

std::vector<v1::AgentMessage> Supervisor::StartLauncherRun(
    const v1::Assignment& a, Launcher launcher, const AttemptPlan& plan) {
  const std::string name(Name(launcher));
  auto refuse_all = [&](absl::string_view error) {
    LogError(absl::StrCat(Where(a.key()), ": ", name, ": ", error));
    std::vector<v1::AgentMessage> replies;
    for (int rank : a.ranks()) {
      replies.push_back(Refuse(a.key(), rank, absl::StrCat(name, ": ", error)));
    }
    return replies;
  };
  Attempt attempt;
  attempt.key = a.key();
  attempt.dir = plan.dir;
  attempt.checkpoint_dir = plan.checkpoint_dir;
  attempt.launcher = launcher;
  if (a.node_rank() == 0) {
    absl::StatusOr<LauncherPlan> launch =
        PlanLauncher(launcher, a, options_.node, options_.launchers, plan.dir);
    if (!launch.ok()) return refuse_all(launch.status().message());
    if (absl::Status written = LaunchProcess::WriteFiles(*launch);
        !written.ok()) {
      return refuse_all(written.message());
    }
    // Rank 0's worker binds the reserved port: free it just before.
    reservations_.erase(KeyOf(a.key()));
    attempt.launch.emplace(launcher, a.key(), plan.dir, processes_, clock_);
    if (absl::Status started = attempt.launch->Start(*launch, a.world_size(),
                                                     a.launch_nodes_size());
        !started.ok()) {
      return refuse_all(started.message());
    }
  }
  // Once started: what a restarted agent follows again.
  const FollowedRanks followed{launcher, {a.ranks().begin(), a.ranks().end()}};
  if (absl::Status written =
          WriteFileAtomically(absl::StrCat(plan.dir, "/", kFollowedRanksFile),
                              FormatFollowedRanks(followed));
      !written.ok()) {
    LogWarning(absl::StrCat(Where(a.key()), ": ", written.message(),
                            " (its ranks are not followed again after an "
                            "agent restart)"));
  }
  for (const RankPlan& rank_plan : plan.ranks) {
    Rank rank;
    rank.paths = rank_plan;
    rank.followed = true;
    rank.running = true;
    rank.tailer = std::make_unique<EventTailer>(
        rank_plan.events_path, rank_plan.acked_path, a.key(), rank_plan.rank);
    attempt.ranks.push_back(std::move(rank));
  }
  attempts_.emplace(KeyOf(a.key()), std::move(attempt));
  return {};
}

void Supervisor::Stop(Attempt& attempt, absl::string_view reason) {
  if (attempt.cancelling) return;
  attempt.cancelling = true;
  attempt.kill_deadline_ms = clock_->NowMs() + options_.kill_grace_ms;
  LogInfo(absl::StrCat(Where(attempt.key), ": cancelling (", reason,
                       "): SIGTERM to its workers"));
  if (attempt.launch) attempt.launch->Signal(SIGTERM);
  for (Rank& rank : attempt.ranks) {
    if (rank.running) SignalRank(rank, SIGTERM);
  }
}

void Supervisor::SignalRank(const Rank& rank, int sig) {
  if (rank.process.pid <= 0) return;  // a followed rank not found yet
  processes_->SignalGroup(rank.process.pid, sig);
  // Started by a launcher (or reattached to), it need not lead a group.
  if (!rank.is_child) processes_->SignalProcess(rank.process.pid, sig);
}

void Supervisor::HandleCancel(const v1::Cancel& cancel) {
  const Key key = KeyOf(cancel.key());
  reservations_.erase(key);
  auto it = attempts_.find(key);
  if (it == attempts_.end()) {
    LogInfo(absl::StrCat(Where(cancel.key()),
                         ": cancel for an attempt not running here"));
    return;
  }
  Stop(it->second, cancel.reason());
}

int Supervisor::FenceAll(absl::string_view reason) {
  reservations_.clear();
  int stopped = 0;
  for (auto& [key, attempt] : attempts_) {
    const bool runs =
        std::any_of(attempt.ranks.begin(), attempt.ranks.end(),
                    [](const Rank& rank) { return rank.running; });
    if (attempt.cancelling || !runs) continue;
    Stop(attempt, reason);
    ++stopped;
  }
  return stopped;
}

Supervisor::Rank* Supervisor::FindRank(const v1::AttemptKey& key, int rank) {
  auto it = attempts_.find(KeyOf(key));
  if (it == attempts_.end()) return nullptr;
  for (Rank& kept : it->second.ranks) {
    if (kept.paths.rank == rank) return &kept;
  }
  return nullptr;
}

void Supervisor::HandleAcks(const v1::Acks& acks) {
  if (acks.acks_size() > 0 || acks.exits_size() > 0) {
    resend_.NoteProgress(clock_->NowMs());
  }
  for (const v1::Ack& ack : acks.acks()) {
    if (Rank* rank = FindRank(ack.key(), ack.rank())) {
      rank->tailer->Ack(ack.seq());
    }
  }
  for (const v1::ExitAck& ack : acks.exits()) {
    refused_.erase({ack.key().run_id(), ack.key().attempt(), ack.rank()});
    Rank* rank = FindRank(ack.key(), ack.rank());
    // Only an exit this agent reported can have been stored.
    if (rank != nullptr && rank->report) rank->exit_acked = true;
  }
}

std::map<std::string, pid_t> Supervisor::FindUnfoundRanks() {
  std::set<std::string> wanted;
  for (const auto& [key, attempt] : attempts_) {
    for (const Rank& rank : attempt.ranks) {
      if (rank.followed && rank.running && rank.process.pid <= 0) {
        wanted.insert(rank.paths.events_path);
      }
    }
  }
  if (wanted.empty()) return {};
  return processes_->FindByArguments(wanted);
}

void Supervisor::CheckFollowed(Attempt& attempt, Rank& rank,
                               const std::map<std::string, pid_t>& found) {
  const int64_t now = clock_->NowMs();
  if (rank.process.pid > 0) {
    if (IsSameProcessRunning(rank.process, *processes_)) return;
  } else if (auto it = found.find(rank.paths.events_path); it != found.end()) {
    const pid_t pid = it->second;
    absl::StatusOr<uint64_t> start = processes_->StartTime(pid);
    if (start.ok()) {
      rank.process = PidRecord{pid, *start};
      if (absl::Status written =
              WritePidFile(rank.paths.pid_path, rank.process);
          !written.ok()) {
        LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": ",
                                written.message(),
                                " (no reattach after an agent restart)"));
      }
      LogInfo(absl::StrCat(Where(attempt.key, rank.paths.rank),
                           ": following worker pid ", pid, " started by ",
                           std::string(Name(attempt.launcher))));
      // Cancelled before it showed up: it stops too.
      if (attempt.cancelling) SignalRank(rank, SIGTERM);
      return;
    }
  } else if (rank.tailer->run_stop_status()) {
    // Ran and ended between two looks.
  } else if (attempt.launch && !attempt.launch->running()) {
    const std::optional<LauncherEnd>& end = attempt.launch->end();
    std::string why =
        end && !end->error.empty()
            ? end->error
            : absl::StrCat(std::string(Name(attempt.launcher)), " ended");
    std::string tail = ReadFileTail(attempt.launch->stderr_path(), 600);
    absl::StrAppend(&why, " before rank ", rank.paths.rank, " started");
    if (!tail.empty()) absl::StrAppend(&why, ": ", tail);
    rank.exit = ExitRecord{{-1, 0}, why};
  } else if (attempt.cancelling && now >= attempt.kill_deadline_ms) {
    rank.exit = ExitRecord{{-1, 0}, "cancelled before it started"};
  } else {
    return;  // not started yet
  }
  rank.running = false;
  rank.ended_ms = now;
}

bool Supervisor::ReadyToReport(const Attempt& attempt, const Rank& rank) const {
  if (!rank.followed || rank.exit || rank.tailer->run_stop_status() ||
      attempt.cancelling) {
    return true;
  }
  // Ended without a final state: the launch's outcome may say why.
  const int64_t now = clock_->NowMs();
  if (attempt.launch) {
    return !attempt.launch->running() &&
           now >= attempt.launch->ended_ms() + kLauncherSettleMs;
  }
  return now >= rank.ended_ms + kFollowerSettleMs;
}

void Supervisor::CheckExit(Attempt& attempt, Rank& rank,
                           const std::map<std::string, pid_t>& found) {
  if (!rank.running) return;
  if (rank.followed) return CheckFollowed(attempt, rank, found);
  if (rank.is_child) {
    std::optional<ExitStatus> status = processes_->TryWait(rank.process.pid);
    if (!status) return;
    rank.exit = ExitRecord{*status, ""};
    // Whatever the worker left in its group goes with it.
    processes_->SignalGroup(rank.process.pid, SIGKILL);
  } else if (IsSameProcessRunning(rank.process, *processes_)) {
    return;
  }
  rank.running = false;
}

v1::WorkerExited Supervisor::ReportExit(Attempt& attempt, Rank& rank) {
  const std::string cancelled = SchedulerCancelled(attempt.launch);
  if (!rank.exit) {
    // Not our child: the outcome comes from its events.
    const std::optional<std::string>& stop = rank.tailer->run_stop_status();
    if (!stop && !cancelled.empty()) {
      rank.exit = ExitRecord{{-1, 0}, cancelled};
    } else if (!stop && attempt.cancelling) {
      rank.exit = ExitRecord{
          {-1, 0}, "stopped by the agent; exit status unknown (not its child)"};
    } else if (!stop) {
      rank.exit = ExitRecord{{-1, 0}, kWorkerLostError};
    } else {
      rank.exit =
          ExitRecord{{*stop == event_keys::kStatusSuccess ? 0 : 1, 0}, ""};
    }
  }
  v1::WorkerExited report;
  *report.mutable_key() = attempt.key;
  report.set_rank(rank.paths.rank);
  report.set_exit_code(rank.exit->status.exit_code);
  report.set_signal(rank.exit->status.signal);
  report.set_error(rank.exit->error);
  report.set_last_seq(rank.tailer->last_seq());
  if (!cancelled.empty() && rank.exit->error == cancelled) {
    report.set_cancelled(rank.exit->error);
  }
  // A launcher collects its ranks' output: its stderr on rank 0's node.
  const std::string stderr_path = !rank.followed ? rank.paths.launch.stderr_path
                                  : attempt.launch
                                      ? attempt.launch->stderr_path()
                                      : "";
  report.set_stderr_tail(ReadFileTail(stderr_path, kStderrTailBytes));
  return report;
}

std::vector<v1::AgentMessage> Supervisor::Poll() {
  std::vector<v1::Event> events;
  std::vector<v1::AgentMessage> exits;
  const int64_t now = clock_->NowMs();
  const std::map<std::string, pid_t> found = FindUnfoundRanks();
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    Attempt& attempt = it->second;
    if (attempt.launch) {
      attempt.launch->Check(/*asked=*/attempt.cancelling);
      if (attempt.cancelling && now >= attempt.kill_deadline_ms) {
        attempt.launch->Signal(SIGKILL);
      }
    }
    bool all_done = !attempt.launch_running();
    for (Rank& rank : attempt.ranks) {
      CheckExit(attempt, rank, found);
      if (attempt.cancelling && rank.running && !rank.killed &&
          rank.process.pid > 0 && now >= attempt.kill_deadline_ms) {
        LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank),
                                ": worker pid ", rank.process.pid,
                                " outlived the grace period: SIGKILL"));
        SignalRank(rank, SIGKILL);
        rank.killed = true;
      }
      std::vector<v1::Event> fresh = rank.tailer->ReadNew();
      std::move(fresh.begin(), fresh.end(), std::back_inserter(events));
      if (!rank.running && !rank.report && rank.tailer->caught_up() &&
          ReadyToReport(attempt, rank)) {
        rank.report = ReportExit(attempt, rank);
        if (absl::Status written =
                WriteExitFile(rank.paths.exit_path, *rank.exit);
            !written.ok()) {
          LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": ",
                                  written.message()));
        }
        LogInfo(absl::StrCat(Where(attempt.key, rank.paths.rank),
                             ": worker pid ", rank.process.pid,
                             " ended: ", DescribeExit(*rank.exit)));
        exits.emplace_back();
        *exits.back().mutable_worker_exited() = *rank.report;
      }
      MarkDoneWhenDelivered(attempt, rank);
      all_done = all_done && rank.done;
    }
    if (all_done) {
      it = attempts_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [id, exited] : refused_) {
    exits.emplace_back();
    *exits.back().mutable_worker_exited() = exited;
  }
  std::vector<v1::AgentMessage> out = BatchEvents(std::move(events));
  std::move(exits.begin(), exits.end(), std::back_inserter(out));
  return out;
}

void Supervisor::MarkDoneWhenDelivered(Attempt& attempt, Rank& rank) {
  if (rank.done || !rank.report || !rank.exit_acked ||
      !rank.tailer->all_acked()) {
    return;
  }
  // Before the done file: an agent that dies in between removes them again
  // after the exit is reported and acknowledged once more.
  if (rank.paths.rank == 0 && Succeeded(*rank.exit)) {
    RemoveRunCheckpoints(attempt.key, attempt.checkpoint_dir);
  }
  rank.done = true;
  if (absl::Status written = WriteFileAtomically(rank.paths.done_path, "");
      !written.ok()) {
    LogWarning(absl::StrCat(Where(attempt.key, rank.paths.rank), ": ",
                            written.message()));
  }
}

std::vector<v1::AgentMessage> Supervisor::Resend() {
  resend_.NoteSent(clock_->NowMs());
  std::vector<v1::Event> events;
  std::vector<v1::AgentMessage> exits;
  for (const auto& [key, attempt] : attempts_) {
    for (const Rank& rank : attempt.ranks) {
      std::vector<v1::Event> unacked = rank.tailer->Unacked();
      std::move(unacked.begin(), unacked.end(), std::back_inserter(events));
      if (rank.report && !rank.exit_acked) {
        exits.emplace_back();
        *exits.back().mutable_worker_exited() = *rank.report;
      }
    }
  }
  for (const auto& [id, exited] : refused_) {
    exits.emplace_back();
    *exits.back().mutable_worker_exited() = exited;
  }
  std::vector<v1::AgentMessage> out = BatchEvents(std::move(events));
  std::move(exits.begin(), exits.end(), std::back_inserter(out));
  return out;
}

std::vector<v1::AgentMessage> Supervisor::ResendOverdue() {
  bool waiting = false;
  for (const auto& [key, attempt] : attempts_) {
    for (const Rank& rank : attempt.ranks) {
      waiting = waiting || !rank.tailer->all_acked() ||
                (rank.report && !rank.exit_acked);
    }
  }
  if (!resend_.Due(waiting, clock_->NowMs())) return {};
  return Resend();
}

std::vector<v1::RunningAttempt> Supervisor::Running() const {
  std::vector<v1::RunningAttempt> running;
  for (const auto& [key, attempt] : attempts_) {
    v1::RunningAttempt entry;
    *entry.mutable_key() = attempt.key;
    for (const Rank& rank : attempt.ranks) {
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
  for (const auto& [id, exited] : refused_) {
    auto same = std::find_if(
        running.begin(), running.end(), [&](const v1::RunningAttempt& r) {
          return r.key().run_id() == exited.key().run_id() &&
                 r.key().attempt() == exited.key().attempt();
        });
    if (same == running.end()) {
      same = running.emplace(running.end());
      *same->mutable_key() = exited.key();
    }
    same->add_exited_ranks(exited.rank());
  }
  return running;
}

}  // namespace hpcai500::agent
