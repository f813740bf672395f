#include "server/event_intake.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

}  // namespace hpcai500
