// hpcai500d's change points over every run series: see series_changes.h.
#include "server/coordinator/series_changes.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "methodology/regress_band.h"

namespace hpcai500 {
namespace {

constexpr size_t kMaxFilterBytes = 4096;

}  // namespace

SeriesChanges::SeriesChanges(const ChangePointOptions& options)
    : options_(options) {}

absl::Status SeriesChanges::Load(Store& store) {
  v1::ListRunsRequest filter;
  filter.set_state(v1::RUN_STATE_SUCCEEDED);
  filter.set_limit(0);  // all of them
  absl::StatusOr<std::vector<v1::Run>> runs = store.ListRuns(filter);
  if (!runs.ok()) return runs.status();
  std::sort(runs->begin(), runs->end(),
            [](const v1::Run& a, const v1::Run& b) { return a.id() < b.id(); });
  std::map<std::string, std::vector<v1::Run>> grouped;
  for (v1::Run& run : *runs) {
    if (!IsChangeHistoryRun(run)) continue;
    grouped[RegressSeriesKey(run.spec())].push_back(std::move(run));
  }
  std::map<std::string, std::unique_ptr<SeriesChangeHistory>> loaded;
  for (auto& [key, series_runs] : grouped) {
    auto history = std::make_unique<SeriesChangeHistory>(
        key, series_runs.front().spec().name(), options_);
    history->Reset(series_runs);
    loaded[key] = std::move(history);
  }
  absl::MutexLock lock(&mu_);
  series_ = std::move(loaded);
  return absl::OkStatus();
}

std::vector<v1::ChangePoint> SeriesChanges::Add(const v1::Run& run) {
  if (!IsChangeHistoryRun(run)) return {};
  const std::string key = RegressSeriesKey(run.spec());
  absl::MutexLock lock(&mu_);
  std::unique_ptr<SeriesChangeHistory>& history = series_[key];
  if (history == nullptr) {
    history =
        std::make_unique<SeriesChangeHistory>(key, run.spec().name(), options_);
  }
  return history->Add(run);
}

absl::StatusOr<v1::ListChangesResponse> SeriesChanges::List(
    const v1::ListChangesRequest& request) const {
  if (request.since_ms() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "since_ms: must not be negative, got ", request.since_ms()));
  }
  if (request.name().size() > kMaxFilterBytes ||
      request.series().size() > kMaxFilterBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        request.name().size() > kMaxFilterBytes ? "name" : "series",
        ": longer than ", kMaxFilterBytes, " bytes"));
  }
  v1::ListChangesResponse response;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, history] : series_) {
      if (!request.series().empty() && key != request.series()) continue;
      if (!request.name().empty() && history->name() != request.name()) {
        continue;
      }
      for (v1::ChangePoint& change : history->Changes()) {
        if (ChangeMatches(change, request)) {
          *response.add_changes() = std::move(change);
        }
      }
    }
  }
  std::stable_sort(response.mutable_changes()->begin(),
                   response.mutable_changes()->end(),
                   [](const v1::ChangePoint& a, const v1::ChangePoint& b) {
                     return a.run_id() > b.run_id();
                   });
  return response;
}

bool ChangeMatches(const v1::ChangePoint& change,
                   const v1::ListChangesRequest& request) {
  if (!request.name().empty() && change.name() != request.name()) return false;
  if (!request.series().empty() && change.series() != request.series()) {
    return false;
  }
  if (request.since_ms() > 0 && change.finished_ms() < request.since_ms()) {
    return false;
  }
  return !request.regressions_only() || change.regression();
}

}  // namespace hpcai500
