// RunScoring: how a running run comes to its verdict. After each batch of
// events it forecasts from the run's quality curve whether the run reaches
// its target (and aborts a hopeless one whose spec asks for it); once
// every rank exited 0 and sent run_stop (or the exit grace ran out), and
// every event the ranks wrote is stored, it scores the run (a resumed run
// over the epochs its attempts kept) and ends it. docs/design.md "Forecast
// and early abort" and "Nothing lost" say why.
//
// Not thread-safe: a part of the Coordinator, called with its state's mutex
// held.
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_SCORING_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_SCORING_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/events.h"
#include "methodology/scoring.h"
#include "server/coordinator/attempts.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/run_record.h"

namespace hpcai500 {

class RunScoring {
 public:
  // `state` and `attempts` (which ends runs) are borrowed and must outlive
  // this.
  RunScoring(CoordinatorState* state, Attempts* attempts)
      : state_(*state), attempts_(*attempts) {}

  RunScoring(const RunScoring&) = delete;
  RunScoring& operator=(const RunScoring&) = delete;

  // Scores and ends the run once every rank exited 0 and sent run_stop (or
  // `force`, after the grace period), and every event the ranks wrote is
  // stored: no verdict on part of a run while the store is failing.
  void MaybeFinishLocked(RunRecord& record, bool force)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // After new epochs of a running run: forecasts from its quality curve
  // whether it reaches its target (methodology/forecast.h) once an evaluation
  // is new, keeps the forecast with the run, and aborts the run (ABORTED, its
  // workers cancelled) when its spec asks for it and the forecast is
  // hopeless.
  void ForecastLocked(RunRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Rank 0 of the current attempt reported where it resumed (`event`, a
  // hpcai500_resume): records it and carries the kept epochs.
  void NoteResumeLocked(RunRecord& record, const EventLine& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // The earlier attempts a resumed current attempt keeps epochs of, oldest
  // first, with their stored events; empty when it started fresh.
  absl::StatusOr<std::vector<AttemptEvents>> EarlierAttemptsLocked(
      const RunRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

 private:
  // Whether every exited rank's events, up to the last seq it wrote, are
  // stored without a gap; when they are and some were stored late
  // (events_unstored), reloads the tracker from the store in seq order.
  bool EventsStoredLocked(RunRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
  Attempts& attempts_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_SCORING_H_
