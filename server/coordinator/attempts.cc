// How attempts begin and end: see attempts.h.
#include "server/coordinator/attempts.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "common/run_state.h"
#include "server/coordinator/found_checkpoint.h"
#include "server/coordinator/run_fingerprint.h"
#include "server/coordinator/run_log.h"
#include "server/coordinator/run_reads.h"

namespace hpcai500 {

void Attempts::ScheduleLocked() {
  const int64_t passes = state_.scheduler.passes();
  // Measured on the real clock (a test's fake clock does not move).
  const absl::Time start = absl::Now();
  const std::vector<Scheduler::Placement> placements =
      state_.scheduler.Schedule(state_.clock->NowMs());
  if (state_.scheduler.passes() != passes) {
    scheduler_pass_.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  for (const Scheduler::Placement& placement : placements) {
    auto it = state_.runs.find(placement.run_id);
    if (it == state_.runs.end()) {
      state_.scheduler.Deallocate(placement.run_id);
      continue;
    }
    StartAttemptLocked(it->second, placement.nodes, placement.backfilled);
  }
  if (state_.scheduler.passes() != passes) NoteWaitingReasonsLocked();
}

void Attempts::NoteWaitingReasonsLocked() {
  for (const int64_t run_id : state_.scheduler.QueuedRunIds()) {
    auto it = state_.runs.find(run_id);
    if (it == state_.runs.end()) continue;
    RunRecord& record = it->second;
    if (record.run.state() != v1::RUN_STATE_QUEUED) continue;
    // By reference: 10,000 runs waiting behind one head share its text.
    const std::string& reason = state_.scheduler.Reason(run_id);
    const std::string held =
        reason == "Held" ? absl::StrCat("Held: by ", record.run.held_by(),
                                        " (`hpcai500 release ", run_id, "`)")
                         : "";
    const std::string& shown = held.empty() ? reason : held;
    if (shown == record.run.reason()) continue;
    record.run.set_reason(shown);
    record.Changed("");
  }
}

void Attempts::StartAttemptLocked(RunRecord& record,
                                  const std::vector<std::string>& nodes,
                                  bool backfilled) {
  const auto [resume_attempt, resume_epoch] = ResumePointLocked(record, nodes);
  v1::Attempt& attempt = record.BeginAttempt(nodes, state_.clock->NowMs(),
                                             resume_attempt, resume_epoch);
  for (const std::string& name : nodes) {
    auto node = state_.nodes.nodes().find(name);
    if (node != state_.nodes.nodes().end() &&
        node->second.info.has_inventory()) {
      (*attempt.mutable_inventory())[name] = node->second.info.inventory();
    }
  }
  state_.PersistLocked(record);
  std::string line = absl::StrFormat(
      "attempt %d: placed on %s%s; node %s reserves the rendezvous port",
      attempt.number(), absl::StrJoin(nodes, ", "),
      backfilled ? " (backfilled ahead of a waiting run)" : "", nodes.front());
  if (resume_epoch > 0) {
    absl::StrAppendFormat(&line,
                          "; resumes from attempt %d's checkpoint of "
                          "epoch %d",
                          resume_attempt, resume_epoch);
  }
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
  SendReserveLocked(record);
}

void Attempts::SendReserveLocked(RunRecord& record) {
  v1::CoordinatorMessage reserve =
      record.AssignmentFor(v1::Assignment::PHASE_RESERVE, /*node_rank=*/0);
  reserve.mutable_assignment()->set_probe_checkpoints_attempt(
      ProbeAttemptLocked(record));
  state_.SendLocked(record.nodes.front(), reserve);
}

void Attempts::EndRunLocked(RunRecord& record, v1::RunState state,
                            const std::string& error, bool cancel_workers) {
  const int64_t now = state_.clock->NowMs();
  state_.scheduler.Deallocate(record.run.id());
  record.End(state, error, now);
  record.RefreshEpochs(state_.MetricName(record.run.spec()), /*flush=*/true);
  *record.run.mutable_fingerprint() = RunFingerprint(record.run, state_.nodes);
  state_.PersistLocked(record);  // saved before any agent hears of it
  if (cancel_workers) CancelWorkersLocked(record, error);
  health_.RecordStragglersLocked(record);
  record.tracker.Reset();  // the events are stored; scoring is done
  const std::string line =
      FinalLine(record.run, state_.MetricName(record.run.spec()));
  LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

void Attempts::RetryOrFailLocked(RunRecord& record, const std::string& why) {
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
  state_.scheduler.Deallocate(record.run.id());
  record.Requeue(why, state_.clock->NowMs());
  state_.PersistLocked(record);  // saved before any agent hears of it
  v1::CoordinatorMessage cancel;
  *cancel.mutable_cancel()->mutable_key() = lost;
  cancel.mutable_cancel()->set_reason(why);
  for (const std::string& node : gang) state_.SendLocked(node, cancel);
  state_.scheduler.Enqueue(CoordinatorState::RequestFor(record.run));
  const std::string line = absl::StrFormat(
      "attempt %d lost (%s); requeued for attempt %d (retry %d of %d)",
      lost.attempt(), why, lost.attempt() + 1, retries_used + 1, max_retries);
  LogWarning(absl::StrCat("run ", record.run.id(), " ", line));
  record.Changed(line);
}

void Attempts::CancelWorkersLocked(const RunRecord& record,
                                   const std::string& why) {
  if (record.run.attempts_size() == 0) return;
  v1::CoordinatorMessage cancel;
  *cancel.mutable_cancel()->mutable_key() = record.key();
  cancel.mutable_cancel()->set_reason(why);
  for (const std::string& node : record.nodes) state_.SendLocked(node, cancel);
}

std::pair<int32_t, int32_t> Attempts::ResumePointLocked(
    const RunRecord& record, const std::vector<std::string>& gang) {
  if (record.run.attempts_size() == 0) return {0, 0};
  const v1::Attempt& last = *record.run.attempts().rbegin();
  std::pair<int32_t, int32_t> point = {0, 0};
  absl::StatusOr<std::vector<EventLine>> rank0 = StoredEventLines(
      *state_.store, record.run.id(), last.number(), /*rank=*/0);
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

bool Attempts::GangReachesLocked(const std::vector<std::string>& gang,
                                 const std::string& writer_node) const {
  const bool all_shared =
      std::all_of(gang.begin(), gang.end(), [&](const std::string& name) {
        auto it = state_.nodes.nodes().find(name);
        return it != state_.nodes.nodes().end() &&
               it->second.shared_checkpoints;
      });
  return all_shared || (gang.size() == 1 && gang.front() == writer_node);
}

int32_t Attempts::ProbeAttemptLocked(const RunRecord& record) const {
  const int32_t current = record.key().attempt();
  if (current < 2) return 0;
  const v1::Attempt& previous = record.run.attempts(current - 2);
  if (previous.nodes_size() == 0) return 0;
  return GangReachesLocked(record.nodes, previous.nodes(0)) ? current - 1 : 0;
}

void Attempts::ResumeFromFoundLocked(RunRecord& record,
                                     const v1::PortReserved& port) {
  v1::Attempt& attempt = record.current_attempt();
  ResumeFacts facts;
  facts.run_id = record.run.id();
  facts.probed_attempt = ProbeAttemptLocked(record);
  facts.epochs = record.run.spec().epochs();
  for (const v1::FoundCheckpoint& found : port.found_checkpoints()) {
    facts.resume_epoch = attempt.resume_from_epoch();
    absl::StatusOr<Store::SeqRange> stored = state_.store->StoredSeqs(
        record.run.id(), facts.probed_attempt, /*rank=*/0);
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
        verified.ok() ? state_.store->InsertEvents(rows) : verified.status();
    std::string line;
    if (!done.ok()) {
      line = absl::StrFormat(
          "attempt %d: a checkpoint found on disk in attempt %d's folder is "
          "ignored: %s",
          attempt.number(), found.attempt(), done.status().message());
    } else {
      attempt.set_resume_from_attempt(verified->attempt);
      attempt.set_resume_from_epoch(verified->epoch);
      state_.PersistLocked(record);
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

void Attempts::EnforceTimeLimitsLocked(int64_t now) {
  for (auto& [run_id, record] : state_.runs) {
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

}  // namespace hpcai500
