#include "server/leaderboard.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/scoring.h"

namespace hpcai500 {
namespace {

bool ConfigKnown(const v1::LeaderboardRequest& request,
                 const Registry& registry) {
  for (const ConfigInfo& config : registry.configs()) {
    if (config.name == request.config() &&
        (request.workload().empty() || config.workload == request.workload())) {
      return true;
    }
  }
  return false;
}

bool MatchesFilters(const v1::RunSpec& spec,
                    const v1::LeaderboardRequest& request) {
  return (request.workload().empty() ||
          spec.workload() == request.workload()) &&
         (request.config().empty() || spec.config() == request.config());
}

// Whether a submission's runs are all there and all succeeded with a score
// that no admin invalidated (one invalidated repetition takes the whole
// submission off: its aggregate would no longer be what was run).
bool Complete(const std::vector<const v1::Run*>& members) {
  const bool all_scored =
      std::all_of(members.begin(), members.end(), [](const v1::Run* run) {
        return run->state() == v1::RUN_STATE_SUCCEEDED && run->has_score() &&
               run->invalidated_by().empty();
      });
  return all_scored && static_cast<int>(members.size()) >=
                           std::max(1, members.front()->spec().repetitions());
}

// Ranked rows first, each part by Valid FLOPS, best first.
void RankRows(std::vector<v1::LeaderboardRow>& rows) {
  std::stable_sort(
      rows.begin(), rows.end(),
      [](const v1::LeaderboardRow& a, const v1::LeaderboardRow& b) {
        if (a.ranked() != b.ranked()) return a.ranked();
        if (a.valid_flops() != b.valid_flops()) {
          return a.valid_flops() > b.valid_flops();
        }
        return a.submission_id() < b.submission_id();
      });
  int rank = 0;
  for (v1::LeaderboardRow& row : rows) row.set_rank(row.ranked() ? ++rank : 0);
}

}  // namespace

std::optional<v1::LeaderboardRow> SubmissionRow(
    const std::vector<const v1::Run*>& members) {
  if (members.empty() || !Complete(members) ||
      members.front()->spec().workload() == kNoopWorkload) {
    return std::nullopt;
  }
  std::vector<const v1::Run*> sorted = members;
  std::sort(
      sorted.begin(), sorted.end(),
      [](const v1::Run* a, const v1::Run* b) { return a->id() < b->id(); });
  const v1::RunSpec& spec = sorted.front()->spec();
  std::vector<double> vflops, flops, quality;
  v1::LeaderboardRow row;
  row.set_ranked(true);
  for (const v1::Run* run : sorted) {
    vflops.push_back(run->score().valid_flops());
    flops.push_back(run->score().flops());
    quality.push_back(run->score().quality());
    row.add_run_ids(run->id());
    row.set_finished_ms(std::max(row.finished_ms(), run->finished_ms()));
    if (!run->spec().ranked()) row.set_ranked(false);
  }
  const Aggregate valid = AggregateRepetitions(vflops);
  row.set_submission_id(sorted.front()->submission_id());
  row.set_name(spec.name());
  row.set_system(spec.system());
  row.set_workload(spec.workload());
  row.set_config(spec.config());
  row.set_level(spec.level());
  row.set_valid_flops(valid.mean);
  row.set_valid_flops_min(valid.min);
  row.set_valid_flops_max(valid.max);
  row.set_flops(AggregateRepetitions(flops).mean);
  row.set_quality(AggregateRepetitions(quality).mean);
  row.set_target(sorted.front()->score().target());
  row.set_runs(static_cast<int32_t>(sorted.size()));
  return row;
}

absl::Status ValidateLeaderboardRequest(const v1::LeaderboardRequest& request,
                                        const Registry& registry) {
  if (!request.workload().empty() &&
      registry.FindWorkload(request.workload()) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown workload '", request.workload(), "'"));
  }
  if (!request.config().empty() && !ConfigKnown(request, registry)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown config '", request.config(), "'"));
  }
  if (request.limit() < 0 || request.limit() > kMaxLeaderboardLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaderboard: 'limit' must be between 0 (every row) and ",
                     kMaxLeaderboardLimit, ", got ", request.limit()));
  }
  if (request.offset() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaderboard: 'offset' must not be negative, got ", request.offset()));
  }
  return absl::OkStatus();
}

v1::LeaderboardResponse BuildLeaderboard(
    const std::vector<v1::Run>& runs, const v1::LeaderboardRequest& request) {
  std::map<int64_t, std::vector<const v1::Run*>> by_submission;
  for (const v1::Run& run : runs) {
    by_submission[run.submission_id()].push_back(&run);
  }
  // (workload, config) -> rows.
  std::map<std::pair<std::string, std::string>, std::vector<v1::LeaderboardRow>>
      groups;
  for (const auto& [submission_id, members] : by_submission) {
    if (!MatchesFilters(members.front()->spec(), request)) continue;
    std::optional<v1::LeaderboardRow> row = SubmissionRow(members);
    if (!row.has_value()) continue;
    groups[{row->workload(), row->config()}].push_back(*std::move(row));
  }
  v1::LeaderboardResponse response;
  int index = 0;
  const int64_t end = request.limit() > 0
                          ? int64_t{request.offset()} + request.limit()
                          : std::numeric_limits<int64_t>::max();
  for (auto& [group, rows] : groups) {
    RankRows(rows);
    for (v1::LeaderboardRow& row : rows) {
      if (index >= request.offset() && index < end) {
        *response.add_rows() = std::move(row);
      }
      ++index;
    }
  }
  response.set_total(index);
  return response;
}

}  // namespace hpcai500
