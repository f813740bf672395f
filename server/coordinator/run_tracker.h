// Follows the events of one attempt of a run as they arrive: keeps them for
// scoring, keeps each epoch's summary (SummarizeEpochs' rule) up to date by
// re-summarising only the epochs an event touched, never the whole run, and
// says which epochs are complete enough to log, each once.
//
// Not thread-safe: its owner serialises calls (the Coordinator holds its
// mutex).
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_TRACKER_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_TRACKER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/events.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class RunTracker {
 public:
  // Forgets everything: a new attempt starts, or the run ended and its
  // events are no longer needed.
  void Reset();

  // Adds one parsed event of the attempt (any rank, any key), in arrival
  // order.
  void Add(EventLine event);

  // Whether no event was added since the last Reset().
  bool empty() const { return events_.empty(); }

  // Every event added since the last Reset(), in arrival order: what
  // ScoreRun reads. Valid until the next Add() or Reset().
  const std::vector<EventLine>& events() const { return events_; }

  // How many distinct ranks sent run_stop.
  int stopped_ranks() const { return static_cast<int>(stopped_ranks_.size()); }

  // The per-epoch summaries, ordered by epoch: what SummarizeEpochs(events())
  // returns.
  std::vector<v1::EpochSummary> Epochs();

  // The summaries of epochs not taken before that are complete (each of
  // `world` ranks sent hpcai500_epoch_stats and rank 0 sent eval_accuracy),
  // or of every epoch not taken before when `flush`. Ordered by epoch; an
  // epoch is taken at most once between two Reset() calls.
  std::vector<v1::EpochSummary> TakeEpochsToLog(size_t world, bool flush);

 private:
  struct Epoch {
    // Indices into events_ of the events its summary is made of.
    std::vector<size_t> events;
    std::set<int32_t> stats_ranks;  // ranks that sent hpcai500_epoch_stats
    bool evaluated = false;         // rank 0 sent eval_accuracy
    bool stale = false;             // summary not yet redone after an Add()
    bool logged = false;            // returned by TakeEpochsToLog()
    std::optional<v1::EpochSummary> summary;  // none: nothing to summarise
  };

  // Re-summarises the epochs marked stale.
  void Refresh();

  std::vector<EventLine> events_;
  std::map<int, Epoch> epochs_;  // by epoch number
  std::set<int32_t> stopped_ranks_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_TRACKER_H_
