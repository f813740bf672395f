#include "agent/event_tailer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/internal/where.h"
#include "agent/pid_file.h"
#include "common/events.h"
#include "common/log.h"

namespace hpcai500::agent {

using agent_internal::Where;

EventTailer::EventTailer(std::string events_path, std::string acked_path,
                         v1::AttemptKey key, int rank)
    : events_path_(std::move(events_path)),
      acked_path_(std::move(acked_path)),
      key_(std::move(key)),
      rank_(rank) {}

absl::Status EventTailer::LoadAcked() {
  absl::StatusOr<int64_t> acked = ReadAckedSeq(acked_path_);
  if (!acked.ok()) return acked.status();
  acked_seq_ = *acked;
  last_seq_ = std::max(last_seq_, acked_seq_);
  return absl::OkStatus();
}

std::vector<v1::Event> EventTailer::ReadNew() {
  fresh_.clear();
  caught_up_ = true;
  int fd = ::open(events_path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};  // not written yet
  char buffer[64 * 1024];
  while (true) {
    if (unacked_.size() >= kMaxUnacked) {
      caught_up_ = false;
      break;
    }
    ssize_t n =
        ::pread(fd, buffer, sizeof(buffer), static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    offset_ += static_cast<uint64_t>(n);
    std::string_view chunk(buffer, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t newline = chunk.find('\n');
      if (newline == std::string_view::npos) {
        if (!discarding_) partial_.append(chunk);
        if (partial_.size() > kMaxEventLineBytes) {
          LogWarning(absl::StrCat(Where(key_, rank_), ": event line over ",
                                  kMaxEventLineBytes, " bytes skipped"));
          partial_.clear();
          discarding_ = true;
        }
        break;
      }
      if (discarding_) {
        discarding_ = false;
      } else {
        partial_.append(chunk.substr(0, newline));
        TakeLine(partial_);
      }
      partial_.clear();
      chunk.remove_prefix(newline + 1);
    }
  }
  ::close(fd);
  return std::move(fresh_);
}

void EventTailer::TakeLine(std::string_view line) {
  absl::StatusOr<EventLine> event = ParseEventLine(line);
  if (!event.ok()) {
    LogWarning(absl::StrCat(
        Where(key_, rank_),
        ": malformed event line skipped: ", event.status().message()));
    return;
  }
  if (event->rank != rank_) {
    LogWarning(absl::StrCat(Where(key_, rank_), ": event seq ", event->seq,
                            " names rank ", event->rank, "; skipped"));
    return;
  }
  if (event->key == "run_stop") {
    const nlohmann::json& status = event->metadata["status"];
    run_stop_status_ = status.is_string() ? status.get<std::string>() : "";
  }
  if (event->seq <= last_seq_) {
    // Acknowledged before an agent restart, or a repeated seq.
    if (event->seq > acked_seq_) {
      LogWarning(absl::StrCat(Where(key_, rank_), ": repeated event seq ",
                              event->seq, " skipped"));
    }
    return;
  }
  last_seq_ = event->seq;
  v1::Event out;
  *out.mutable_key() = key_;
  out.set_rank(rank_);
  out.set_seq(event->seq);
  out.set_line(std::string(line));
  unacked_.push_back(out);
  fresh_.push_back(std::move(out));
}

void EventTailer::Ack(int64_t seq) {
  if (seq <= acked_seq_) return;
  acked_seq_ = seq;
  last_seq_ = std::max(last_seq_, seq);
  while (!unacked_.empty() && unacked_.front().seq() <= seq) {
    unacked_.pop_front();
  }
  absl::Status written = WriteAckedSeq(acked_path_, seq);
  if (!written.ok()) {
    LogWarning(absl::StrCat(Where(key_, rank_),
                            ": cannot persist acked seq: ", written.message()));
  }
}

std::vector<v1::Event> EventTailer::Unacked() const {
  return std::vector<v1::Event>(unacked_.begin(), unacked_.end());
}

}  // namespace hpcai500::agent
