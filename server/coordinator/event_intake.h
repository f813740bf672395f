// What the coordinator does with each batch of event lines an agent sends:
// check each line against the (rank, seq) it was sent with and against the
// node that sent it, fence what belongs to a stale attempt or an ended run
// (unless a leaving node delivers its past attempt's lines), store the rest
// in one transaction and acknowledge what the commit made durable. What the
// lines mean for their run (epochs, resume points, the run's end) stays with
// the Coordinator, which gets the newly stored lines back.
//
// Thread-safe: ParseAgentEvent is a free function; an AckBatch is a value
// that one thread fills and reads; an EventIntake is used under its owner's
// lock (the Coordinator's mu_), its counters read under the same lock.
#ifndef HPCAI500_SERVER_COORDINATOR_EVENT_INTAKE_H_
#define HPCAI500_SERVER_COORDINATOR_EVENT_INTAKE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/events.h"
#include "common/histogram.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/run_record.h"
#include "server/store/store.h"

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

// One agent's batch of events, taken in.
struct IntakeResult {
  // Each line newly stored for a run's current attempt that parses, in the
  // batch's order, with that run's record.
  std::vector<std::pair<RunRecord*, EventLine>> fresh;
  // The Acks to send the agent (none when it owes nothing); empty too when
  // storing failed: then nothing was stored and nothing is acknowledged.
  v1::CoordinatorMessage reply;
  // The records of current attempts some of whose lines were not stored:
  // storing failed, or the store does not hold the attempt as current yet
  // (saving it failed). Those lines are not acknowledged; the agent sends
  // them again, maybe after later ones.
  std::vector<RunRecord*> unstored;
};

class EventIntake {
 public:
  // What the intake asks of the runs, under its owner's lock.
  struct Runs {
    // The record of the active run whose current attempt is `key`, or null.
    std::function<RunRecord*(const v1::AttemptKey& key)> current_attempt;
    // Whether `node` hosted `rank` in attempt `key` of a run held in memory
    // (a past attempt: the run has moved on).
    std::function<bool(const v1::AttemptKey& key, const std::string& node,
                       int32_t rank)>
        hosted_before;
  };

  // `store` and `clock` are borrowed and must outlive the intake.
  EventIntake(Store* store, Clock* clock) : store_(store), clock_(clock) {}

  // Resumes the count of stored lines from the store.
  absl::Status Restore();

  // Checks the batch `events` that node `node` (`leaving`: its agent said it
  // leaves) sent, stores it in one transaction (one synced commit) and
  // builds the acks after it, so that an acknowledged event survives a crash
  // or a power loss. An event of a current attempt from a node that does
  // not host its rank, or with seq below 1, is logged and never
  // acknowledged; a line that does not parse is stored as refused, with its
  // reason, and acknowledged; an event of a stale attempt or an ended run
  // is fenced: acknowledged and never stored, unless a leaving node
  // delivers what its stopped workers wrote for an attempt it hosted (stored
  // as an honest record of that attempt, and no longer its run's news).
  IntakeResult Take(const std::string& node, bool leaving,
                    const v1::Events& events, const Runs& runs);

  // Lines stored since the store was made.
  int64_t ingested() const { return ingested_; }
  // From an event's time to its storing, in seconds.
  Histogram::Snapshot lag() const { return lag_.Read(); }

 private:
  // One event of a batch, checked and ready to store.
  struct Incoming {
    v1::AttemptKey key;
    RunRecord* record = nullptr;  // null unless `key` is a current attempt
    EventRow row;  // the line, or empty with the reason it was refused
    absl::StatusOr<EventLine> parsed;
  };
  // nullopt when the event is ignored (not its node's rank, seq < 1).
  std::optional<Incoming> Check(const std::string& node, bool leaving,
                                const v1::Event& event, const Runs& runs) const;

  Store* const store_;
  Clock* const clock_;
  int64_t ingested_ = 0;
  Histogram lag_{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}};
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_EVENT_INTAKE_H_
