// What the coordinator does with each event line an agent sends, whatever
// run it belongs to: check the line against the (rank, seq) it was sent
// with, and acknowledge a batch so the agent may forget what is stored.
//
// Thread-safe: ParseAgentEvent is a free function; an AckBatch is a value
// that one thread fills and reads.
#ifndef HPCAI500_SERVER_EVENT_INTAKE_H_
#define HPCAI500_SERVER_EVENT_INTAKE_H_

#include <cstdint>
#include <map>
#include <tuple>

#include "absl/status/statusor.h"
#include "common/events.h"
#include "proto/hpcai500.pb.h"
#include "server/store.h"

namespace hpcai500 {

// The parsed line of `event`. InvalidArgument saying what is wrong when the
// line is over kMaxEventLineBytes, does not parse, or names another rank or
// seq than the event it came in.
absl::StatusOr<EventLine> ParseAgentEvent(const v1::Event& event);

// The acknowledgements owed for one batch of events.
class AckBatch {
 public:
  // Notes that (key, rank, seq) was stored or refused for good.
  void Note(const v1::AttemptKey& key, int32_t rank, int64_t seq);
  // Notes that (key, rank, seq) was fenced: it belongs to a stale attempt or
  // an ended run, is never stored, and is acknowledged as it is.
  void NoteFenced(const v1::AttemptKey& key, int32_t rank, int64_t seq);

  // The Acks message for what was noted (no acks when nothing was). Events of
  // a run's current attempt are acknowledged up to what `store` holds
  // without a gap; those of a stale attempt or an unknown run are never
  // stored, so acknowledging them is final and lets the agent drop them.
  v1::CoordinatorMessage Build(Store& store) const;

 private:
  using Id = std::tuple<int64_t, int32_t, int32_t>;  // run, attempt, rank
  // The highest seq noted, stored and fenced events apart.
  std::map<Id, int64_t> highest_;
  std::map<Id, int64_t> fenced_;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_EVENT_INTAKE_H_
