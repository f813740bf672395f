// EventTailer follows one worker rank's event file and keeps the events it
// read until the coordinator acknowledges them. Only complete lines (ending
// in '\n') are taken; a half-written line waits for its newline. The
// acknowledged seq is persisted beside the file, so a restarted agent
// re-reads the file from the start, skips what was acknowledged and resends
// the rest.
//
// A bad line is skipped, never a wall. The worker writes seq 1, 2, 3, ...
// one line each, so every line stands for the seq after the previous one's.
// A line that cannot be this rank's event (torn, malformed, over
// kMaxEventLineBytes, naming another rank, or jumping more than kMaxUnacked
// seqs ahead) is held until the next good line says what it stood for:
//  - the good line has the expected seq (previous + 1): the held lines were
//    not events (stray output, a torn copy the worker wrote again) and are
//    dropped; nothing is missing;
//  - it has a higher seq: every seq in between is missing from the file and
//    is delivered as an error row, a line the coordinator refuses and so
//    stores as an error under that seq. The held lines fill those seqs in
//    order (a torn line then seq + 2: the torn line was seq + 1); seqs left
//    over (a fragment glued to the next line swallowed it) get a line that
//    says no readable line was found.
// So the ack point always moves past a bad line. Held lines after the last
// good line wait for one; when none comes (the worker died mid-line) the
// coordinator is owed nothing more: it has every seq up to the last good one.
//
// Not thread-safe: one owner (the Supervisor) drives it.
#ifndef HPCAI500_AGENT_ATTEMPTS_EVENT_TAILER_H_
#define HPCAI500_AGENT_ATTEMPTS_EVENT_TAILER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

class EventTailer {
 public:
  // Reading pauses while this many events wait for an acknowledgement, so an
  // unreachable coordinator does not grow the agent's memory.
  static constexpr size_t kMaxUnacked = 4096;

  // events_path: the worker's event file (may not exist yet). acked_path:
  // where the acknowledged seq is kept.
  EventTailer(std::string events_path, std::string acked_path,
              v1::AttemptKey key, int rank);

  // Reads the persisted acknowledged seq (0 when absent). Call once before
  // ReadNew.
  absl::Status LoadAcked();

  // Reads the complete lines appended since the last call and returns their
  // events, each also kept until acknowledged, in seq order with no gap.
  // Bad lines are held or become error rows as the rule above says (and are
  // logged); already acknowledged seqs are skipped.
  std::vector<v1::Event> ReadNew();

  // True when the last ReadNew reached the end of the file's complete lines
  // (it did not stop for lack of room).
  bool caught_up() const { return caught_up_; }

  // Forgets every kept event with seq <= seq and persists seq. Stale or
  // repeated acks are ignored.
  void Ack(int64_t seq);

  // The events read but not yet acknowledged, in seq order.
  std::vector<v1::Event> Unacked() const;
  bool all_acked() const { return unacked_.empty(); }
  int64_t acked_seq() const { return acked_seq_; }
  // The highest seq read (an error row's included): once the worker ended
  // and the file was read to its end, the last event it wrote.
  int64_t last_seq() const { return last_seq_; }

  // The status of the run_stop line ("success", "aborted") once one was read.
  const std::optional<std::string>& run_stop_status() const {
    return run_stop_status_;
  }

 private:
  // Sorts one complete line: a good line of a new seq is taken (after the
  // error rows of any gap before it), a repeat is skipped, a bad one held.
  void TakeLine(std::string_view line);
  // Keeps a bad line (why: for the log) until the next good line.
  void HoldBadLine(std::string_view line, absl::string_view why);
  // Delivers seqs last_seq_ + 1 .. seq - 1 as error rows, filled with the
  // held lines in order, and forgets the held lines.
  void FillGapBefore(int64_t seq);
  // Appends event `seq` with `line` to unacked_ and fresh_.
  void Take(int64_t seq, std::string line);

  // Constant after construction.
  const std::string events_path_;
  const std::string acked_path_;
  const v1::AttemptKey key_;
  const int rank_;

  uint64_t offset_ = 0;      // bytes of the file already read
  std::string partial_;      // read bytes after the last '\n'
  bool discarding_ = false;  // inside an over-long line, until its '\n'
  bool caught_up_ = true;
  int64_t acked_seq_ = 0;
  int64_t last_seq_ = 0;  // highest seq taken
  std::deque<v1::Event> unacked_;
  std::vector<std::string> held_;  // bad lines since the last good one
  std::vector<v1::Event> fresh_;   // filled by TakeLine during ReadNew
  std::optional<std::string> run_stop_status_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_ATTEMPTS_EVENT_TAILER_H_
