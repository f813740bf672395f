// How the agent delivers what it keeps for the coordinator: events split
// into batches, and the clock that says when what was sent but not
// acknowledged goes out again on a live stream (a coordinator that cannot
// store, a full disk, acknowledges nothing; a reconnect never comes).
//
// Thread-safe: BatchEvents is a free function; a ResendClock has one owner
// (the Supervisor).
#ifndef HPCAI500_AGENT_SUPERVISOR_DELIVERY_H_
#define HPCAI500_AGENT_SUPERVISOR_DELIVERY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

// The most events, and about the most bytes of lines, in one Events message.
inline constexpr size_t kMaxBatchEvents = 256;
inline constexpr size_t kMaxBatchBytes = 1 << 20;

// Splits events, in order, into Events messages of at most kMaxBatchEvents
// events and about kMaxBatchBytes of lines each.
std::vector<v1::AgentMessage> BatchEvents(std::vector<v1::Event> events);

// When to send again what waits for an acknowledgement: kFirstResendMs
// after it began to wait (or after the last send), then twice as long, up to
// kMaxResendMs. Any acknowledgement restarts the wait.
class ResendClock {
 public:
  static constexpr int64_t kFirstResendMs = 5'000;
  static constexpr int64_t kMaxResendMs = 60'000;

  // An acknowledgement came at `now_ms`.
  void NoteProgress(int64_t now_ms);
  // Everything unacknowledged was sent at `now_ms` (a reconnect's resend).
  void NoteSent(int64_t now_ms) { sent_ms_ = now_ms; }
  // Whether to send it all again at `now_ms`, given whether anything waits
  // for an acknowledgement; when true, logs how long nothing came and backs
  // off (the caller sends, and calls NoteSent).
  bool Due(bool waiting, int64_t now_ms);

 private:
  int64_t waiting_since_ms_ = 0;  // 0: nothing waits
  int64_t sent_ms_ = 0;
  int64_t after_ms_ = kFirstResendMs;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_DELIVERY_H_
