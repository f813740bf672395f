#include "server/coordinator/run_tracker.h"

#include <utility>

#include "common/event_keys.h"
#include "methodology/scoring.h"

namespace hpcai500 {

void RunTracker::Reset() {
  events_.clear();
  events_.shrink_to_fit();
  epochs_.clear();
  stopped_ranks_.clear();
}

void RunTracker::Add(EventLine event) {
  const int epoch = event.epoch();
  if (event.key == event_keys::kEpochStats && epoch >= 0) {
    Epoch& state = epochs_[epoch];
    state.stats_ranks.insert(event.rank);
    state.events.push_back(events_.size());
    state.stale = true;
  } else if (event.key == event_keys::kEvalAccuracy && event.rank == 0 &&
             epoch >= 0) {
    Epoch& state = epochs_[epoch];
    state.evaluated = true;
    state.events.push_back(events_.size());
    state.stale = true;
  } else if (event.key == event_keys::kRunStop) {
    stopped_ranks_.insert(event.rank);
  }
  events_.push_back(std::move(event));
}

std::vector<v1::EpochSummary> RunTracker::Epochs() {
  Refresh();
  std::vector<v1::EpochSummary> out;
  for (const auto& [number, epoch] : epochs_) {
    if (epoch.summary.has_value()) out.push_back(*epoch.summary);
  }
  return out;
}

std::vector<v1::EpochSummary> RunTracker::TakeEpochsToLog(size_t world,
                                                          bool flush) {
  Refresh();
  std::vector<v1::EpochSummary> out;
  for (auto& [number, epoch] : epochs_) {
    if (!epoch.summary.has_value() || epoch.logged) continue;
    const bool complete = epoch.stats_ranks.size() >= world && epoch.evaluated;
    if (!complete && !flush) continue;
    epoch.logged = true;
    out.push_back(*epoch.summary);
  }
  return out;
}

void RunTracker::Refresh() {
  for (auto& [number, epoch] : epochs_) {
    if (!epoch.stale) continue;
    std::vector<EventLine> lines;
    lines.reserve(epoch.events.size());
    for (size_t index : epoch.events) lines.push_back(events_[index]);
    // The one owner of the summarising rule, fed only this epoch's events.
    std::vector<v1::EpochSummary> summaries = SummarizeEpochs(lines);
    if (summaries.empty()) {
      epoch.summary.reset();
    } else {
      epoch.summary = std::move(summaries.front());
    }
    epoch.stale = false;
  }
}

}  // namespace hpcai500
