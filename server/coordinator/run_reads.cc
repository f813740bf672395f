// The read side: what the pages and the CLI read of runs, from the store,
// with the runs the coordinator holds in memory in place of their rows.
#include "server/coordinator/run_reads.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "methodology/scoring.h"
#include "server/coordinator/requests.h"
#include "server/store/leaderboard.h"

namespace hpcai500 {
namespace {

// A run shows at most this many incidents (one per straggling rank and
// attempt).
constexpr int kRunIncidentsShown = 100;

}  // namespace

RunReads::RunReads(Store* store, const Registry* registry, LiveRuns* live,
                   ReadRule may_read, MoreMetrics more_metrics,
                   SpreadLimits spread)
    : store_(store),
      registry_(registry),
      live_(live),
      may_read_(std::move(may_read)),
      more_metrics_(std::move(more_metrics)),
      spread_(spread) {}

absl::StatusOr<v1::Run> CurrentRun(LiveRuns& live, Store& store,
                                   int64_t run_id) {
  if (std::optional<v1::Run> held = live.LiveRun(run_id)) {
    return *std::move(held);
  }
  // Not in memory: ended before it was watched, stored as it ended.
  return store.GetRun(run_id);
}

absl::StatusOr<v1::Run> RunReads::GetRun(int64_t run_id) {
  ASSIGN_OR_RETURN(v1::Run run, CurrentRun(*live_, *store_, run_id));
  // Node health's incidents of the run (stragglers), oldest first.
  ASSIGN_OR_RETURN(std::vector<v1::NodeIncident> incidents,
                   store_->ListIncidents("", run_id, kRunIncidentsShown));
  for (auto it = incidents.rbegin(); it != incidents.rend(); ++it) {
    *run.add_incidents() = std::move(*it);
  }
  return run;
}

absl::StatusOr<v1::ListRunsResponse> RunReads::ListRuns(
    const v1::ListRunsRequest& request) {
  ASSIGN_OR_RETURN(const v1::ListRunsRequest filter, ListRunsFilter(request));
  // Read without the coordinator's lock (the store reads on its own
  // connections); then the runs it holds in memory, newer than what was
  // stored, replace their rows.
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListRuns(filter));
  v1::ListRunsResponse response;
  response.mutable_runs()->Reserve(static_cast<int>(runs.size()));
  for (v1::Run& run : runs) *response.add_runs() = std::move(run);
  live_->ReplaceWithLive(*response.mutable_runs());
  return response;
}

absl::StatusOr<v1::LeaderboardResponse> RunReads::Leaderboard(
    const v1::LeaderboardRequest& request) {
  RETURN_IF_ERROR(ValidateLeaderboardRequest(request, *registry_));
  // Its own table and connection.
  ASSIGN_OR_RETURN(v1::LeaderboardResponse response,
                   store_->Leaderboard(request));
  MarkSpread(spread_, response);
  return response;
}

absl::StatusOr<std::vector<EventLine>> StoredEventLines(
    Store& store, int64_t run_id, int32_t attempt,
    std::optional<int32_t> rank) {
  ASSIGN_OR_RETURN(const std::vector<StoredEvent> stored,
                   store.LoadEvents(run_id, attempt, rank));
  std::vector<EventLine> events;
  events.reserve(stored.size());
  for (const StoredEvent& event : stored) {
    if (!event.error.empty()) continue;  // refused at intake
    absl::StatusOr<EventLine> parsed = ParseEventLine(event.line);
    if (parsed.ok()) events.push_back(*std::move(parsed));
  }
  return events;
}

absl::StatusOr<v1::RunRanksResponse> RunReads::RunRanks(int64_t run_id) {
  ASSIGN_OR_RETURN(const v1::Run run, GetRun(run_id));
  std::map<std::pair<int32_t, int32_t>, v1::RankEpoch> latest;
  for (const v1::Attempt& attempt : run.attempts()) {
    ASSIGN_OR_RETURN(const std::vector<EventLine> events,
                     StoredEventLines(*store_, run_id, attempt.number()));
    for (v1::RankEpoch& row : SummarizeRankEpochs(events, attempt.number())) {
      latest[{row.epoch(), row.rank()}] = std::move(row);
    }
  }
  v1::RunRanksResponse response;
  response.set_run_id(run_id);
  for (auto& [key, row] : latest) *response.add_epochs() = std::move(row);
  if (const ConfigInfo* config =
          registry_->FindConfig(run.spec().workload(), run.spec().config())) {
    response.set_target(config->target);
  }
  if (const WorkloadInfo* workload =
          registry_->FindWorkload(run.spec().workload())) {
    response.set_metric(workload->metric);
  }
  return response;
}

absl::StatusOr<std::string> RunReads::RankLogText(int64_t run_id,
                                                  int32_t attempt, int32_t rank,
                                                  RankLog log) {
  ASSIGN_OR_RETURN(const v1::Run run, GetRun(run_id));
  const bool known =
      std::any_of(run.attempts().begin(), run.attempts().end(),
                  [&](const v1::Attempt& a) { return a.number() == attempt; });
  if (!known) {
    return absl::NotFoundError(
        absl::StrCat("run ", run_id, " has no attempt ", attempt));
  }
  const int32_t world = run.spec().nodes() * run.spec().ranks_per_node();
  if (rank < 0 || rank >= world) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has ranks 0 to ",
                                            world - 1, ", not ", rank));
  }
  std::string text;
  if (log == RankLog::kEvents) {
    ASSIGN_OR_RETURN(const std::vector<StoredEvent> events,
                     store_->LoadEvents(run_id, attempt, rank));
    for (const StoredEvent& event : events) {
      if (event.error.empty()) {
        absl::StrAppend(&text, event.line, "\n");
      } else {
        absl::StrAppend(&text, "# seq ", event.seq, " refused: ", event.error,
                        "\n");
      }
    }
    return text;
  }
  ASSIGN_OR_RETURN(const std::vector<v1::WorkerExited> exits,
                   store_->ReadExits(run_id, attempt));
  for (const v1::WorkerExited& exit : exits) {
    if (exit.rank() != rank) continue;
    text = exit.stderr_tail();
    if (!exit.error().empty()) absl::StrAppend(&text, exit.error(), "\n");
    return text;
  }
  return absl::NotFoundError(
      absl::StrCat("rank ", rank, " of run ", run_id, " attempt ", attempt,
                   " has not exited yet: its stderr comes with its exit"));
}

absl::StatusOr<v1::ListNodesResponse> RunReads::ListNodes() {
  return live_->ListNodes();
}

std::string RunReads::MetricsText() {
  std::string text = live_->MetricsText();
  if (more_metrics_) text += more_metrics_();
  return text;
}

absl::StatusOr<v1::ListChangesResponse> RunReads::ListChanges(
    const v1::ListChangesRequest& request) {
  return live_->ListChanges(request);
}

absl::Status RunReads::Health() {
  const StoreHealth health = store_->Health();
  if (!health.failing) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "store failing since ",
      absl::FormatTime("%Y-%m-%dT%H:%M:%SZ",
                       absl::FromUnixMillis(health.failing_since_ms),
                       absl::UTCTimeZone()),
      ": ", health.last_error));
}

absl::Status RunReads::AuthorizeRead(absl::string_view bearer) {
  return may_read_ ? may_read_(bearer) : absl::OkStatus();
}

}  // namespace hpcai500
