// One rank's event file read line by line, bad lines held until a good
// one says what they stood for, events kept until acknowledged.
#include "agent/attempts/event_tailer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/pid_file.h"
#include "agent/attempts/where.h"
#include "common/event_keys.h"
#include "common/events.h"
#include "common/log.h"

namespace hpcai500::agent {
namespace {

// Held bad lines kept in full; later ones before the same good line are
// counted in the log only (their seqs still get an error row).
constexpr size_t kMaxHeldLines = 16;

// The line of an error row for a seq the file has no readable line for. It
// lacks the ":::MLLOG " prefix, so the coordinator refuses it as an error.
std::string NoReadableLine(int64_t seq) {
  return absl::StrCat("hpcai500-agent: no readable event line for seq ", seq);
}

}  // namespace

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
          HoldBadLine("",
                      absl::StrCat("line over ", kMaxEventLineBytes, " bytes"));
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
    HoldBadLine(line, event.status().message());
    return;
  }
  if (event->rank != rank_) {
    HoldBadLine(line,
                absl::StrCat("seq ", event->seq, " names rank ", event->rank));
    return;
  }
  if (event->seq > last_seq_ + 1 + static_cast<int64_t>(kMaxUnacked)) {
    HoldBadLine(line, absl::StrCat("seq ", event->seq, " jumps too far past ",
                                   last_seq_));
    return;
  }
  if (event->key == event_keys::kRunStop) {
    const nlohmann::json& status = event->metadata[event_keys::kMetaStatus];
    run_stop_status_ = status.is_string() ? status.get<std::string>() : "";
  }
  if (event->seq <= last_seq_) {
    // Acknowledged before an agent restart, or a repeated seq; what was
    // held before it is older still.
    if (event->seq > acked_seq_) {
      LogWarning(absl::StrCat(Where(key_, rank_), ": repeated event seq ",
                              event->seq, " skipped"));
    }
    held_.clear();
    return;
  }
  FillGapBefore(event->seq);
  Take(event->seq, std::string(line));
}

void EventTailer::HoldBadLine(std::string_view line, absl::string_view why) {
  LogWarning(absl::StrCat(Where(key_, rank_),
                          ": unreadable event line after seq ", last_seq_, " (",
                          why, ")"));
  // A line too long to send is held as "" (its error row says so).
  if (held_.size() < kMaxHeldLines) {
    held_.emplace_back(line.size() > kMaxEventLineBytes ? "" : line);
  }
}

void EventTailer::FillGapBefore(int64_t seq) {
  const int64_t first = last_seq_ + 1;
  if (seq > first) {
    LogWarning(absl::StrCat(Where(key_, rank_), ": seqs ", first, "..", seq - 1,
                            " have no good line; sent as errors"));
  } else if (!held_.empty()) {
    LogWarning(absl::StrCat(Where(key_, rank_), ": ", held_.size(),
                            " unreadable line(s) before seq ", seq,
                            " were not events; dropped"));
  }
  for (int64_t missing = first; missing < seq; ++missing) {
    const size_t i = static_cast<size_t>(missing - first);
    // An empty held line is one too long to send.
    Take(missing, i < held_.size() && !held_[i].empty()
                      ? std::move(held_[i])
                      : NoReadableLine(missing));
  }
  held_.clear();
}

void EventTailer::Take(int64_t seq, std::string line) {
  last_seq_ = seq;
  v1::Event out;
  *out.mutable_key() = key_;
  out.set_rank(rank_);
  out.set_seq(seq);
  out.set_line(std::move(line));
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
