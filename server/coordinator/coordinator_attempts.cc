// The attempts' half of the Coordinator: a lost attempt is requeued (or the
// run fails when it has no retry left), a new attempt resumes from the
// newest checkpoint it can reach, a run is scored once every event of its
// attempt is stored (a resumed run over the epochs its attempts kept), and
// attempts past their time limit are stopped.
// Declared in coordinator.h; docs/design.md "Requeue and resume" says why.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "common/scoring.h"
#include "common/status_macros.h"
#include "server/coordinator/coordinator.h"
#include "server/coordinator/found_checkpoint.h"
#include "server/coordinator/run_log.h"
#include "server/coordinator/run_reads.h"

namespace hpcai500 {

void Coordinator::CancelWorkersLocked(const RunRecord& record,
                                      const std::string& why) {
  if (record.run.attempts_size() == 0) return;
  v1::CoordinatorMessage cancel;
  *cancel.mutable_cancel()->mutable_key() = record.key();
  cancel.mutable_cancel()->set_reason(why);
  for (const std::string& node : record.nodes) SendLocked(node, cancel);
}

void Coordinator::RetryOrFailLocked(RunRecord& record, const std::string& why) {
  const int retries_used = record.run.attempts_size() - 1;
  const int max_retries = record.run.spec().max_retries();
  if (retries_used >= max_retries) {
    EndRunLocked(
        record, v1::RUN_STATE_FAILED,
        absl::StrFormat("%s (no retry left: max_retries %d)", why, max_retries),
        /*cancel_workers=*/true);
    return;
  }
  const v1::AttemptKey lost = record.key();
  const std::vector<std::string> gang = record.nodes;
  scheduler_.Deallocate(record.run.id());
  record.Requeue(why, clock_->NowMs());
  PersistLocked(record);  // saved before any agent hears of it
  v1::CoordinatorMessage cancel;
  *cancel.mutable_cancel()->mutable_key() = lost;
  cancel.mutable_cancel()->set_reason(why);
  for (const std::string& node : gang) SendLocked(node, cancel);
  scheduler_.Enqueue(RequestFor(record.run));
  const std::string line = absl::StrFormat(
      "attempt %d lost (%s); requeued for attempt %d (retry %d of %d)",
      lost.attempt(), why, lost.attempt() + 1, retries_used + 1, max_retries);
  LogWarning(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

std::pair<int32_t, int32_t> Coordinator::ResumePointLocked(
    const RunRecord& record, const std::vector<std::string>& gang) {
  if (record.run.attempts_size() == 0) return {0, 0};
  const v1::Attempt& last = *record.run.attempts().rbegin();
  std::pair<int32_t, int32_t> point = {0, 0};
  absl::StatusOr<std::vector<EventLine>> rank0 =
      StoredEventLines(*store_, record.run.id(), last.number(), /*rank=*/0);
  if (!rank0.ok()) {
    LogError(absl::StrCat("run ", record.run.id(), ": reading attempt ",
                          last.number(),
                          "'s checkpoints: ", rank0.status().ToString()));
  } else {
    for (const EventLine& event : *rank0) {
      if (event.key == event_keys::kCheckpoint &&
          event.epoch() > point.second) {
        point = {last.number(), event.epoch()};
      }
    }
  }
  if (point.second == 0 && last.resumed_epoch() > 0) {
    point = {last.resume_from_attempt(), last.resumed_epoch()};
  }
  if (point.second == 0) return point;
  const v1::Attempt& writer = record.run.attempts(point.first - 1);
  const std::string writer_node =
      writer.nodes_size() > 0 ? writer.nodes(0) : std::string();
  if (GangReachesLocked(gang, writer_node)) return point;
  LogInfo(absl::StrFormat(
      "run %d: the next attempt starts from epoch 1: attempt %d's checkpoint "
      "of epoch %d is on node %s, which does not share checkpoints with %s",
      record.run.id(), point.first, point.second, writer_node,
      absl::StrJoin(gang, ", ")));
  return {0, 0};
}

bool Coordinator::GangReachesLocked(const std::vector<std::string>& gang,
                                    const std::string& writer_node) const {
  const bool all_shared =
      std::all_of(gang.begin(), gang.end(), [&](const std::string& name) {
        auto it = nodes_.nodes().find(name);
        return it != nodes_.nodes().end() && it->second.shared_checkpoints;
      });
  return all_shared || (gang.size() == 1 && gang.front() == writer_node);
}

int32_t Coordinator::ProbeAttemptLocked(const RunRecord& record) const {
  const int32_t current = record.key().attempt();
  if (current < 2) return 0;
  const v1::Attempt& previous = record.run.attempts(current - 2);
  if (previous.nodes_size() == 0) return 0;
  return GangReachesLocked(record.nodes, previous.nodes(0)) ? current - 1 : 0;
}

void Coordinator::ResumeFromFoundLocked(RunRecord& record,
                                        const v1::PortReserved& port) {
  v1::Attempt& attempt = record.current_attempt();
  ResumeFacts facts;
  facts.run_id = record.run.id();
  facts.probed_attempt = ProbeAttemptLocked(record);
  facts.epochs = record.run.spec().epochs();
  for (const v1::FoundCheckpoint& found : port.found_checkpoints()) {
    facts.resume_epoch = attempt.resume_from_epoch();
    absl::StatusOr<Store::SeqRange> stored =
        store_->StoredSeqs(record.run.id(), facts.probed_attempt, /*rank=*/0);
    facts.stored_through_seq = stored.ok() ? stored->contiguous : 0;
    absl::StatusOr<VerifiedCheckpoint> verified =
        VerifyFoundCheckpoint(found, facts);
    std::vector<EventRow> rows;
    if (verified.ok()) {
      for (const auto& [seq, line] : verified->events) {
        rows.push_back(EventRow{record.run.id(), verified->attempt, 0, seq,
                                line, "", /*past_attempt=*/true});
      }
    }
    absl::StatusOr<std::vector<EventDisposition>> done =
        verified.ok() ? store_->InsertEvents(rows) : verified.status();
    std::string line;
    if (!done.ok()) {
      line = absl::StrFormat(
          "attempt %d: a checkpoint found on disk in attempt %d's folder is "
          "ignored: %s",
          attempt.number(), found.attempt(), done.status().message());
    } else {
      attempt.set_resume_from_attempt(verified->attempt);
      attempt.set_resume_from_epoch(verified->epoch);
      PersistLocked(record);
      line = absl::StrFormat(
          "attempt %d: resumes from attempt %d's checkpoint of epoch %d, "
          "found complete on disk (%d of its %d event lines were not stored; "
          "stored from its manifest)",
          attempt.number(), verified->attempt, verified->epoch,
          std::count(done->begin(), done->end(), EventDisposition::kStored),
          done->size());
    }
    LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
    record.Changed(line);
  }
}

absl::StatusOr<std::vector<AttemptEvents>> Coordinator::EarlierAttemptsLocked(
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
    ASSIGN_OR_RETURN(part.events, StoredEventLines(*store_, record.run.id(),
                                                   current->number()));
    earlier.push_back(std::move(part));
    through = current->resumed_epoch();
    from = current->resume_from_attempt();
  }
  std::reverse(earlier.begin(), earlier.end());
  return earlier;
}

void Coordinator::NoteResumeLocked(RunRecord& record, const EventLine& event) {
  v1::Attempt& attempt = record.current_attempt();
  const int resumed =
      event.value.is_number_integer() ? event.value.get<int>() : 0;
  attempt.set_resumed_epoch(resumed);
  PersistLocked(record);
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

void Coordinator::EnforceTimeLimitsLocked(int64_t now) {
  for (auto& [run_id, record] : runs_) {
    const int64_t limit_s = record.run.spec().time_limit_s();
    if (limit_s <= 0 || !IsPlaced(record.run.state())) continue;
    const v1::Attempt& attempt = *record.run.attempts().rbegin();
    if (now - attempt.started_ms() < limit_s * 1000) continue;
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrFormat("time limit of %d s reached by attempt %d",
                                 limit_s, attempt.number()),
                 /*cancel_workers=*/true);
  }
}

void Coordinator::MaybeFinishLocked(RunRecord& record, bool force) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const int world = record.world_size();
  if (static_cast<int>(record.exits.size()) < world) return;
  if (!force && record.tracker.stopped_ranks() < world) return;
  if (!EventsStoredLocked(record)) return;
  const ConfigInfo* config =
      registry_->FindConfig(spec.workload(), spec.config());
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  if (config == nullptr || workload == nullptr) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
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
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("scoring: ", score.status().message()),
                 /*cancel_workers=*/false);
    return;
  }
  absl::Status saved = store_->SaveResult(record.run.id(), *score);
  if (absl::IsUnavailable(saved)) {
    // The store is failing for now: scored again on a later tick.
    LogError(absl::StrCat("run ", record.run.id(),
                          ": storing the result: ", saved.message()));
    if (record.all_exited_ms == 0) record.all_exited_ms = clock_->NowMs();
    return;
  }
  if (!saved.ok()) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("storing the result: ", saved.message()),
                 /*cancel_workers=*/false);
    return;
  }
  *record.run.mutable_score() = *score;
  EndRunLocked(record, v1::RUN_STATE_SUCCEEDED, "", /*cancel_workers=*/false);
}

bool Coordinator::EventsStoredLocked(RunRecord& record) {
  const int64_t run_id = record.run.id();
  const int32_t attempt = record.key().attempt();
  std::vector<std::string> missing;
  for (const auto& [rank, exit] : record.exits) {
    absl::StatusOr<Store::SeqRange> stored =
        store_->StoredSeqs(run_id, attempt, rank);
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
    if (record.all_exited_ms == 0) record.all_exited_ms = clock_->NowMs();
    return false;
  }
  if (record.events_unstored) {
    absl::StatusOr<std::vector<EventLine>> stored =
        StoredEventLines(*store_, run_id, attempt);
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
