// Events cut into batches, and when the unacknowledged go out again.
#include "agent/supervisor/delivery.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace hpcai500::agent {

std::vector<v1::AgentMessage> BatchEvents(std::vector<v1::Event> events) {
  std::vector<v1::AgentMessage> batches;
  size_t bytes = 0;
  for (v1::Event& event : events) {
    if (batches.empty() ||
        batches.back().events().events_size() >=
            static_cast<int>(kMaxBatchEvents) ||
        bytes + event.line().size() > kMaxBatchBytes) {
      batches.emplace_back().mutable_events();
      bytes = 0;
    }
    bytes += event.line().size();
    *batches.back().mutable_events()->add_events() = std::move(event);
  }
  return batches;
}

void ResendClock::NoteProgress(int64_t now_ms) {
  // The coordinator stores again; the wait starts over.
  if (waiting_since_ms_ != 0) waiting_since_ms_ = now_ms;
  after_ms_ = kFirstResendMs;
}

bool ResendClock::Due(bool waiting, int64_t now_ms) {
  if (!waiting) {
    waiting_since_ms_ = 0;
    after_ms_ = kFirstResendMs;
    return false;
  }
  if (waiting_since_ms_ == 0) waiting_since_ms_ = now_ms;
  const int64_t silent_ms = now_ms - std::max(waiting_since_ms_, sent_ms_);
  if (silent_ms < after_ms_) return false;
  LogWarning(absl::StrCat("no acknowledgement from the coordinator for ",
                          silent_ms / 1000,
                          " s: sending what it has not acknowledged again"));
  after_ms_ = std::min(after_ms_ * 2, kMaxResendMs);
  return true;
}

}  // namespace hpcai500::agent
