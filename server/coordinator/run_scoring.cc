// How a running run comes to its verdict: see run_scoring.h.
#include "server/coordinator/run_scoring.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "methodology/forecast.h"
#include "server/coordinator/run_reads.h"

namespace hpcai500 {

void RunScoring::MaybeFinishLocked(RunRecord& record, bool force) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const int world = record.world_size();
  if (static_cast<int>(record.exits.size()) < world) return;
  if (!force && record.tracker.stopped_ranks() < world) return;
  if (!EventsStoredLocked(record)) return;
  const ConfigInfo* config =
      state_.registry->FindConfig(spec.workload(), spec.config());
  const WorkloadInfo* workload = state_.registry->FindWorkload(spec.workload());
  if (config == nullptr || workload == nullptr) {
    attempts_.EndRunLocked(
        record, v1::RUN_STATE_FAILED,
        absl::StrCat("scoring: ", spec.workload(), "/", spec.config(),
                     " is not in this coordinator's registry"),
        /*cancel_workers=*/false);
    return;
  }
  absl::StatusOr<v1::Score> score;
  if (record.run.attempts().rbegin()->resumed_epoch() > 0) {
    absl::StatusOr<std::vector<AttemptEvents>> attempts =
        EarlierAttemptsLocked(record);
    if (attempts.ok()) {
      attempts->push_back(
          AttemptEvents{record.tracker.events(),
                        record.run.attempts().rbegin()->resumed_epoch(), -1});
      score = ScoreAttempts(*attempts, *config, *workload);
    } else {
      score = attempts.status();
    }
  } else {
    score = ScoreRun(record.tracker.events(), *config, *workload);
  }
  if (!score.ok()) {
    attempts_.EndRunLocked(record, v1::RUN_STATE_FAILED,
                           absl::StrCat("scoring: ", score.status().message()),
                           /*cancel_workers=*/false);
    return;
  }
  absl::Status saved = state_.store->SaveResult(record.run.id(), *score);
  if (absl::IsUnavailable(saved)) {
    // The store is failing for now: scored again on a later tick.
    LogError(absl::StrCat("run ", record.run.id(),
                          ": storing the result: ", saved.message()));
    if (record.all_exited_ms == 0) record.all_exited_ms = state_.clock->NowMs();
    return;
  }
  if (!saved.ok()) {
    attempts_.EndRunLocked(
        record, v1::RUN_STATE_FAILED,
        absl::StrCat("storing the result: ", saved.message()),
        /*cancel_workers=*/false);
    return;
  }
  *record.run.mutable_score() = *score;
  attempts_.EndRunLocked(record, v1::RUN_STATE_SUCCEEDED, "",
                         /*cancel_workers=*/false);
  for (const v1::ChangePoint& change : state_.changes.Add(record.run)) {
    LogInfo(
        absl::StrFormat("run %d: a change point in %s of '%s': %+.1f%% (%s)",
                        record.run.id(), change.metric(), change.name(),
                        change.change_pct(), change.attribution()));
    if (change.regression() && state_.options.on_regression) {
      state_.options.on_regression(change);
    }
  }
}

void RunScoring::ForecastLocked(RunRecord& record) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const ConfigInfo* config =
      state_.registry->FindConfig(spec.workload(), spec.config());
  // A config without a target (noop) has nothing to forecast.
  if (config == nullptr || config->target <= 0) return;
  const std::vector<CurvePoint> curve = QualityCurve(record.run.epochs());
  if (curve.empty()) return;
  const v1::Forecast& latest = record.run.forecast();
  // Only after a new evaluation: most event batches carry none.
  if (record.run.has_forecast() && latest.epoch() == curve.back().epoch &&
      latest.points() == static_cast<int>(curve.size())) {
    return;
  }
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality(curve, config->target, spec.epochs());
  if (!forecast.ok()) return;  // not enough epochs yet
  if (!IsHopeless(spec, *forecast)) {
    forecast->set_summary(ForecastText(*forecast));
    *record.run.mutable_forecast() = *forecast;
    state_.PersistLocked(record);  // a restart keeps the latest forecast
    record.Changed(absl::StrCat("forecast: ", forecast->summary()));
    return;
  }
  forecast->set_node_hours_saved(NodeHoursLeft(record.run, forecast->epoch()));
  forecast->set_summary(ForecastText(*forecast));
  *record.run.mutable_forecast() = *forecast;
  const std::string why = absl::StrFormat(
      "hopeless after epoch %d (abort_if_hopeless %g): %s", forecast->epoch(),
      spec.abort_if_hopeless(), forecast->summary());
  LogInfo(absl::StrCat("run ", record.run.id(), " aborted: ", why));
  attempts_.EndRunLocked(record, v1::RUN_STATE_ABORTED, why,
                         /*cancel_workers=*/true);
}

void RunScoring::NoteResumeLocked(RunRecord& record, const EventLine& event) {
  v1::Attempt& attempt = record.current_attempt();
  const int resumed =
      event.value.is_number_integer() ? event.value.get<int>() : 0;
  attempt.set_resumed_epoch(resumed);
  state_.PersistLocked(record);
  std::string line;
  if (resumed > 0) {
    absl::StatusOr<std::vector<AttemptEvents>> earlier =
        EarlierAttemptsLocked(record);
    if (earlier.ok()) {
      record.carried_epochs = SummarizeEpochs(KeptEvents(*earlier));
    }
    line = absl::StrFormat(
        "attempt %d: resumed after epoch %d from attempt %d's checkpoint",
        attempt.number(), resumed, attempt.resume_from_attempt());
  } else if (attempt.resume_from_epoch() > 0) {
    line = absl::StrFormat(
        "attempt %d: the checkpoint of epoch %d was not found; training "
        "starts from epoch 1",
        attempt.number(), attempt.resume_from_epoch());
  }
  if (line.empty()) return;
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

absl::StatusOr<std::vector<AttemptEvents>> RunScoring::EarlierAttemptsLocked(
    const RunRecord& record) {
  std::vector<AttemptEvents> earlier;
  const v1::Attempt* current = &*record.run.attempts().rbegin();
  int through = current->resumed_epoch();
  int from = current->resume_from_attempt();
  while (through > 0) {
    if (from < 1 || from >= current->number()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "attempt %d resumed from attempt %d, which is not an earlier one",
          current->number(), from));
    }
    current = &record.run.attempts(from - 1);
    AttemptEvents part;
    part.through_epoch = through;
    part.after_epoch = current->resumed_epoch();
    ASSIGN_OR_RETURN(
        part.events,
        StoredEventLines(*state_.store, record.run.id(), current->number()));
    earlier.push_back(std::move(part));
    through = current->resumed_epoch();
    from = current->resume_from_attempt();
  }
  std::reverse(earlier.begin(), earlier.end());
  return earlier;
}

bool RunScoring::EventsStoredLocked(RunRecord& record) {
  const int64_t run_id = record.run.id();
  const int32_t attempt = record.key().attempt();
  std::vector<std::string> missing;
  for (const auto& [rank, exit] : record.exits) {
    absl::StatusOr<Store::SeqRange> stored =
        state_.store->StoredSeqs(run_id, attempt, rank);
    if (!stored.ok()) {
      missing.push_back(
          absl::StrCat("rank ", rank, " (", stored.status().message(), ")"));
      continue;
    }
    const int64_t wrote = std::max(exit.last_seq(), stored->highest);
    if (stored->contiguous < wrote) {
      missing.push_back(absl::StrFormat("rank %d: seq %d..%d", rank,
                                        stored->contiguous + 1, wrote));
    }
  }
  if (!missing.empty()) {
    if (!record.waiting_for_events) {
      record.waiting_for_events = true;
      const std::string line = absl::StrCat(
          "not scored yet: events not stored (", absl::StrJoin(missing, "; "),
          "); their agents send them again");
      LogWarning(absl::StrCat("run ", run_id, " ", line));
      record.Changed(line);
    }
    if (record.all_exited_ms == 0) record.all_exited_ms = state_.clock->NowMs();
    return false;
  }
  if (record.events_unstored) {
    absl::StatusOr<std::vector<EventLine>> stored =
        StoredEventLines(*state_.store, run_id, attempt);
    if (!stored.ok()) return false;  // tried again on a later tick
    record.tracker.Reset();
    for (EventLine& event : *stored) record.tracker.Add(std::move(event));
    record.events_unstored = false;
  }
  if (record.waiting_for_events) {
    record.waiting_for_events = false;
    record.Changed("every event stored; scoring");
  }
  return true;
}

}  // namespace hpcai500
