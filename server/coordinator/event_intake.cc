#include "server/coordinator/event_intake.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace hpcai500 {

absl::StatusOr<EventLine> ParseAgentEvent(const v1::Event& event) {
  if (event.line().size() > kMaxEventLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("line of ", event.line().size(),
                     " bytes is over the limit of ", kMaxEventLineBytes));
  }
  absl::StatusOr<EventLine> parsed = ParseEventLine(event.line());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(parsed.status().message());
  }
  if (parsed->rank != event.rank() || parsed->seq != event.seq()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("line says rank %d seq %d", parsed->rank, parsed->seq));
  }
  return parsed;
}

void AckBatch::Note(const v1::AttemptKey& key, int32_t rank, int64_t seq) {
  int64_t& highest = highest_[{key.run_id(), key.attempt(), rank}];
  highest = std::max(highest, seq);
}

void AckBatch::NoteFenced(const v1::AttemptKey& key, int32_t rank,
                          int64_t seq) {
  int64_t& highest = fenced_[{key.run_id(), key.attempt(), rank}];
  highest = std::max(highest, seq);
}

v1::CoordinatorMessage AckBatch::Build(Store& store) const {
  v1::CoordinatorMessage reply;
  for (const auto& [id, highest] : highest_) {
    const auto& [run_id, attempt, rank] = id;
    v1::AttemptKey key;
    key.set_run_id(run_id);
    key.set_attempt(attempt);
    absl::StatusOr<int32_t> current = store.CurrentAttempt(run_id);
    int64_t seq = highest;
    if (current.ok() && *current == attempt) {
      absl::StatusOr<int64_t> contiguous =
          store.ContiguousSeq(run_id, attempt, rank);
      seq = contiguous.ok() ? *contiguous : 0;
    }
    if (seq == 0) continue;
    v1::Ack* ack = reply.mutable_acks()->add_acks();
    *ack->mutable_key() = key;
    ack->set_rank(rank);
    ack->set_seq(seq);
  }
  for (const auto& [id, highest] : fenced_) {
    const auto& [run_id, attempt, rank] = id;
    v1::Ack* ack = reply.mutable_acks()->add_acks();
    ack->mutable_key()->set_run_id(run_id);
    ack->mutable_key()->set_attempt(attempt);
    ack->set_rank(rank);
    ack->set_seq(highest);
  }
  return reply;
}

absl::Status EventIntake::Restore() {
  ASSIGN_OR_RETURN(ingested_, store_->CountEvents());
  return absl::OkStatus();
}

IntakeResult EventIntake::Take(const std::string& node, bool leaving,
                               const v1::Events& events, const Runs& runs) {
  std::vector<Incoming> incoming;
  std::vector<EventRow> rows;
  AckBatch acks;
  int fenced = 0;
  for (const v1::Event& event : events.events()) {
    std::optional<Incoming> checked = Check(node, leaving, event, runs);
    if (!checked.has_value()) continue;
    if (checked->record == nullptr && !checked->row.past_attempt) {
      acks.NoteFenced(checked->key, checked->row.rank, checked->row.seq);
      ++fenced;
      continue;
    }
    rows.push_back(checked->row);
    incoming.push_back(*std::move(checked));
  }
  if (fenced > 0) {
    LogInfo(
        absl::StrFormat("node %s: %d event(s) of stale attempts or ended "
                        "runs acknowledged and dropped (fenced)",
                        node, fenced));
  }
  IntakeResult result;
  if (rows.empty()) {
    result.reply = acks.Build(*store_);
    return result;
  }
  absl::StatusOr<std::vector<EventDisposition>> dispositions =
      store_->InsertEvents(rows);
  if (!dispositions.ok()) {
    // Nothing stored: no ack, the agent sends the batch again (after a
    // while without acks, not only on a reconnect).
    LogError(absl::StrFormat("storing %d events from node %s: %s", rows.size(),
                             node, dispositions.status().ToString()));
    for (const Incoming& in : incoming) {
      if (in.record != nullptr) result.unstored.push_back(in.record);
    }
    return result;
  }
  for (size_t i = 0; i < incoming.size(); ++i) {
    Incoming& in = incoming[i];
    if ((*dispositions)[i] == EventDisposition::kStale &&
        in.record != nullptr) {
      // Current here, not yet in the store (saving the attempt failed: a
      // full disk): not stored, so not acknowledged; sent again later.
      result.unstored.push_back(in.record);
      continue;
    }
    acks.Note(in.key, in.row.rank, in.row.seq);
    if ((*dispositions)[i] != EventDisposition::kStored) continue;
    ++ingested_;
    if (!in.parsed.ok()) continue;
    // In doubles: time_ms is the worker's, any int64, and the difference of
    // two of those may not fit in one.
    const double lag_ms = static_cast<double>(clock_->NowMs()) -
                          static_cast<double>(in.parsed->time_ms);
    lag_.Observe(std::max(0.0, lag_ms) / 1000.0);
    if (in.record != nullptr) {
      result.fresh.emplace_back(in.record, *std::move(in.parsed));
    }
  }
  result.reply = acks.Build(*store_);
  return result;
}

std::optional<EventIntake::Incoming> EventIntake::Check(
    const std::string& node, bool leaving, const v1::Event& event,
    const Runs& runs) const {
  const v1::AttemptKey& key = event.key();
  const std::string where = absl::StrFormat(
      "run %d attempt %d rank %d seq %d from node %s", key.run_id(),
      key.attempt(), event.rank(), event.seq(), node);
  RunRecord* record = runs.current_attempt(key);
  if (record != nullptr &&
      (!record->HostsRank(node, event.rank()) || event.seq() < 1)) {
    LogWarning(absl::StrCat("ignoring event ", where,
                            ": that node does not host that rank, or seq < 1"));
    return std::nullopt;
  }
  // A pilot agent delivers what its stopped workers wrote after its
  // Leaving already gave the run a new attempt.
  const bool past_attempt = record == nullptr && leaving && event.seq() >= 1 &&
                            runs.hosted_before(key, node, event.rank());
  Incoming incoming{key, record, EventRow{}, ParseAgentEvent(event)};
  const std::string error =
      incoming.parsed.ok() ? std::string()
                           : std::string(incoming.parsed.status().message());
  if (!error.empty()) {
    LogWarning(absl::StrCat("refusing event ", where, ": ", error));
  }
  incoming.row = EventRow{key.run_id(),
                          key.attempt(),
                          event.rank(),
                          event.seq(),
                          error.empty() ? event.line() : std::string(),
                          error,
                          past_attempt};
  return incoming;
}

}  // namespace hpcai500
