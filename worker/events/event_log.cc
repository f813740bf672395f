#include "worker/events/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "common/event_keys.h"

namespace hpcai500::worker {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonInt(int64_t v) { return std::to_string(v); }

std::string JsonDouble(double v) {
  if (!std::isfinite(v)) return std::string(kJsonNull);
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string JsonObject(const JsonMembers& members) {
  std::string out = "{";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out += ", ";
    out += JsonString(members[i].first);
    out += ": ";
    out += members[i].second;
  }
  out += "}";
  return out;
}

namespace {

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kPointInTime:
      return "POINT_IN_TIME";
    case EventType::kIntervalStart:
      return "INTERVAL_START";
    case EventType::kIntervalEnd:
      return "INTERVAL_END";
  }
  return "POINT_IN_TIME";
}

// `file` as seen from the repository's root. The compiler spells a source
// file's path absolute (HPCAI500_SOURCE_ROOT), or relative to the build
// folder when ccache rewrites it (scripts/build.sh sets its base folder),
// as this file's own __FILE__ shows; a build may mix both (a ninja run
// without ccache's base folder), so either is taken off, and a relative
// path's leading "../" (a build folder inside the checkout). Anything else
// is kept.
std::string_view FromRepositoryRoot(std::string_view file) {
  static const std::string_view own_root = [] {
    constexpr std::string_view kSelf = "worker/events/event_log.cc";
    const std::string_view self = __FILE__;
    return self.size() >= kSelf.size() &&
                   self.substr(self.size() - kSelf.size()) == kSelf
               ? self.substr(0, self.size() - kSelf.size())
               : std::string_view();
  }();
  for (const std::string_view root :
       {std::string_view(HPCAI500_SOURCE_ROOT), own_root}) {
    if (!root.empty() && file.substr(0, root.size()) == root) {
      file.remove_prefix(root.size());
      return file;
    }
  }
  while (file.substr(0, 3) == "../") file.remove_prefix(3);
  return file;
}

}  // namespace

int64_t EventLog::SystemClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<EventLog> EventLog::Open(const std::string& path, int rank,
                                         std::FILE* echo, Clock clock,
                                         std::string* error) {
  int fd = -1;
  if (!path.empty()) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      *error = "events file " + path + ": cannot create folder " +
               parent.string() + ": " + ec.message();
      return nullptr;
    }
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = "events file " + path + ": " + std::strerror(errno);
      return nullptr;
    }
  }
  return std::unique_ptr<EventLog>(
      new EventLog(fd, rank, echo, std::move(clock)));
}

EventLog::EventLog(int fd, int rank, std::FILE* echo, Clock clock)
    : fd_(fd), rank_(rank), echo_(echo), clock_(std::move(clock)) {}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string EventLog::FormatLine(int64_t time_ms, EventType type,
                                 std::string_view key,
                                 std::string_view value_json, int64_t seq,
                                 int rank, const JsonMembers& metadata,
                                 SourceLine where) {
  JsonMembers meta = {{"file", JsonString(FromRepositoryRoot(where.file))},
                      {"lineno", JsonInt(where.line)},
                      {event_keys::kMetaSeq, JsonInt(seq)},
                      {event_keys::kMetaRank, JsonInt(rank)}};
  meta.insert(meta.end(), metadata.begin(), metadata.end());
  JsonMembers line = {{"namespace", JsonString("")},
                      {"time_ms", JsonInt(time_ms)},
                      {"event_type", JsonString(EventTypeName(type))},
                      {"key", JsonString(key)},
                      {"value", std::string(value_json)},
                      {"metadata", JsonObject(meta)}};
  return ":::MLLOG " + JsonObject(line) + "\n";
}

void EventLog::Emit(EventType type, std::string_view key,
                    std::string_view value_json, const JsonMembers& metadata,
                    SourceLine where) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string line = FormatLine(clock_(), type, key, value_json,
                                      next_seq_, rank_, metadata, where);
  if (line.size() > kMaxLineBytes) {
    throw std::runtime_error("event " + std::string(key) + " is " +
                             std::to_string(line.size()) +
                             " bytes, over the 64 KiB line limit");
  }
  if (fd_ >= 0) {
    // One write(2) per line; O_APPEND makes it land whole at the end.
    ssize_t n;
    do {
      n = ::write(fd_, line.data(), line.size());
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(line.size())) {
      throw std::runtime_error(std::string("cannot write events file: ") +
                               (n < 0 ? std::strerror(errno) : "short write"));
    }
  }
  ++next_seq_;
  if (keeping_lines_) kept_.push_back(line.substr(0, line.size() - 1));
  if (echo_ != nullptr) {
    std::fwrite(line.data(), 1, line.size(), echo_);
    std::fflush(echo_);
  }
}

void EventLog::KeepLines() {
  std::lock_guard<std::mutex> lock(mu_);
  keeping_lines_ = true;
}

std::vector<std::string> EventLog::TakeKeptLines() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  lines.swap(kept_);
  return lines;
}

}  // namespace hpcai500::worker
