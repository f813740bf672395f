// A launcher run's launch and its followed ranks, started, found, taken up
// again after a restart and told ended.
#include "agent/supervisor/launcher_runs.h"

#include <signal.h>

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/where.h"
#include "agent/launch/launch_process.h"
#include "agent/system/files.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace hpcai500::agent {

LauncherRuns::LauncherRuns(const NodeContext* node,
                           const LauncherSettings* settings,
                           ProcessLauncher* processes, Clock* clock)
    : node_(node), settings_(settings), processes_(processes), clock_(clock) {}

absl::StatusOr<SupervisedAttempt> LauncherRuns::Start(
    const v1::Assignment& a, Launcher launcher, const AttemptPlan& plan,
    absl::FunctionRef<void()> before_launch) {
  SupervisedAttempt attempt = NewAttempt(a.key(), plan, launcher);
  if (a.node_rank() == 0) {
    if (absl::Status launched = Launch(a, plan, before_launch, attempt);
        !launched.ok()) {
      return absl::Status(
          launched.code(),
          absl::StrCat(std::string(Name(launcher)), ": ", launched.message()));
    }
  }
  RecordFollowedRanks(a, launcher, plan.dir);
  for (const RankPlan& rank_plan : plan.ranks) {
    SupervisedRank rank = NewRank(a.key(), rank_plan);
    rank.followed = true;
    rank.running = true;
    attempt.ranks.push_back(std::move(rank));
  }
  return attempt;
}

absl::Status LauncherRuns::Launch(const v1::Assignment& a,
                                  const AttemptPlan& plan,
                                  absl::FunctionRef<void()> before_launch,
                                  SupervisedAttempt& attempt) {
  absl::StatusOr<LauncherPlan> launch =
      PlanLauncher(attempt.launcher, a, *node_, *settings_, plan.dir);
  if (!launch.ok()) return launch.status();
  RETURN_IF_ERROR(LaunchProcess::WriteFiles(*launch));
  before_launch();
  attempt.launch.emplace(attempt.launcher, a.key(), plan.dir, processes_,
                         clock_);
  return attempt.launch->Start(*launch, a.world_size(), a.launch_nodes_size());
}

void LauncherRuns::RecordFollowedRanks(const v1::Assignment& a,
                                       Launcher launcher,
                                       const std::string& dir) {
  const FollowedRanks followed{launcher, {a.ranks().begin(), a.ranks().end()}};
  if (absl::Status written =
          WriteFileAtomically(absl::StrCat(dir, "/", kFollowedRanksFile),
                              FormatFollowedRanks(followed));
      !written.ok()) {
    LogWarning(absl::StrCat(Where(a.key()), ": ", written.message(),
                            " (its ranks are not followed again after an "
                            "agent restart)"));
  }
}

std::optional<FollowedRanks> LauncherRuns::Reattach(
    SupervisedAttempt& attempt) {
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

std::map<std::string, pid_t> LauncherRuns::FindUnfoundRanks(
    const std::map<AttemptId, SupervisedAttempt>& attempts) {
  std::set<std::string> wanted;
  for (const auto& [id, attempt] : attempts) {
    for (const SupervisedRank& rank : attempt.ranks) {
      if (rank.followed && rank.running && rank.process.pid <= 0) {
        wanted.insert(rank.paths.events_path);
      }
    }
  }
  if (wanted.empty()) return {};
  return processes_->FindByArguments(wanted);
}

void LauncherRuns::CheckLaunch(SupervisedAttempt& attempt) {
  if (!attempt.launch) return;
  attempt.launch->Check(/*asked=*/attempt.cancelling);
  if (attempt.cancelling && clock_->NowMs() >= attempt.kill_deadline_ms) {
    attempt.launch->Signal(SIGKILL);
  }
}

void LauncherRuns::CheckFollowed(SupervisedAttempt& attempt,
                                 SupervisedRank& rank,
                                 const std::map<std::string, pid_t>& found) {
  const int64_t now = clock_->NowMs();
  if (rank.process.pid > 0) {
    if (IsSameProcessRunning(rank.process, *processes_)) return;
  } else if (auto it = found.find(rank.paths.events_path); it != found.end()) {
    const pid_t pid = it->second;
    absl::StatusOr<uint64_t> start = processes_->StartTime(pid);
    if (start.ok()) {
      rank.process = PidRecord{pid, *start};
      RecordPid(attempt.key, rank);
      LogInfo(absl::StrCat(Where(attempt.key, rank.paths.rank),
                           ": following worker pid ", pid, " started by ",
                           std::string(Name(attempt.launcher))));
      // Cancelled before it showed up: it stops too.
      if (attempt.cancelling) SignalRank(rank, SIGTERM, *processes_);
      return;
    }
  } else if (rank.tailer->run_stop_status()) {
    // Ran and ended between two looks.
  } else if (attempt.launch && !attempt.launch->running()) {
    rank.exit = ExitRecord{{-1, 0}, WhyNotStarted(attempt, rank)};
  } else if (attempt.cancelling && now >= attempt.kill_deadline_ms) {
    rank.exit = ExitRecord{{-1, 0}, "cancelled before it started"};
  } else {
    return;  // not started yet
  }
  rank.running = false;
  rank.ended_ms = now;
}

std::string LauncherRuns::WhyNotStarted(const SupervisedAttempt& attempt,
                                        const SupervisedRank& rank) const {
  const std::optional<LauncherEnd>& end = attempt.launch->end();
  std::string why =
      end && !end->error.empty()
          ? end->error
          : absl::StrCat(std::string(Name(attempt.launcher)), " ended");
  std::string tail = ReadFileTail(attempt.launch->stderr_path(), 600);
  absl::StrAppend(&why, " before rank ", rank.paths.rank, " started");
  if (!tail.empty()) absl::StrAppend(&why, ": ", tail);
  return why;
}

bool LauncherRuns::ReadyToReport(const SupervisedAttempt& attempt,
                                 const SupervisedRank& rank) const {
  if (rank.exit || rank.tailer->run_stop_status() || attempt.cancelling) {
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

}  // namespace hpcai500::agent
