// EventLog writes the worker's numbered MLPerf-style event lines (the
// contract in docs/events.md) to an append-only file and echoes them to a
// stdio stream. Each line is built whole and written with one write(2), so a
// tailing reader never sees half a line. No LibTorch here: tests link it
// cheaply.
//
// Thread-safe: Emit() may be called from any thread (the stall watchdog
// writes run_stop from its own thread); lines never interleave.
#ifndef HPCAI500_WORKER_EVENTS_EVENT_LOG_H_
#define HPCAI500_WORKER_EVENTS_EVENT_LOG_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hpcai500::worker {

// A JSON object's members in order; each value is already rendered JSON.
using JsonMembers = std::vector<std::pair<std::string, std::string>>;

// JSON renderings used for event values and metadata.
std::string JsonString(std::string_view s);
std::string JsonInt(int64_t v);
// Integral values keep a ".0" (12000000.0); others use the shortest text
// that reads back as the same double. Non-finite values render as null.
std::string JsonDouble(double v);
std::string JsonObject(const JsonMembers& members);
inline constexpr std::string_view kJsonNull = "null";

// Where an event was logged, for the line's "file" and "lineno" metadata (as
// MLPerf's mllog names its caller). Here()'s default arguments are evaluated
// where the outermost call is written, so a parameter
// `SourceLine where = SourceLine::Here()` names the caller's line. `file` is
// as the compiler spelled it; the line shows it from the repository root.
struct SourceLine {
  static SourceLine Here(const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
    return SourceLine{file, line};
  }
  const char* file = "";
  int line = 0;
};

enum class EventType { kPointInTime, kIntervalStart, kIntervalEnd };

// The longest line docs/events.md allows, "\n" included.
inline constexpr size_t kMaxLineBytes = 64 * 1024;

class EventLog {
 public:
  // Milliseconds since the Unix epoch; replaced by tests.
  using Clock = std::function<int64_t()>;
  static int64_t SystemClockMs();

  // Opens `path` for appending (O_APPEND, created with its parent folders);
  // an empty path writes to `echo` only. `echo` (may be null) is borrowed and
  // must outlive the EventLog. Returns nullptr and sets *error (naming the
  // path) when the file cannot be opened.
  static std::unique_ptr<EventLog> Open(const std::string& path, int rank,
                                        std::FILE* echo, Clock clock,
                                        std::string* error);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends one line with the next seq (1, 2, ...). `value_json` is rendered
  // JSON; `metadata` members follow file and lineno (`where`, by default the
  // caller), seq and rank. Throws std::runtime_error when the line exceeds
  // kMaxLineBytes or the file write fails; a failed line does not consume a
  // seq.
  void Emit(EventType type, std::string_view key, std::string_view value_json,
            const JsonMembers& metadata = {},
            SourceLine where = SourceLine::Here());

  // Renders one line (with its trailing "\n") without writing it.
  static std::string FormatLine(int64_t time_ms, EventType type,
                                std::string_view key,
                                std::string_view value_json, int64_t seq,
                                int rank, const JsonMembers& metadata,
                                SourceLine where);

  // From now on, keeps a copy of each line written (without its "\n") for
  // TakeKeptLines(): rank 0 puts an epoch's lines into its checkpoint's
  // manifest (common/checkpoint_manifest.h).
  void KeepLines();
  // The lines kept since KeepLines() or the previous call, in seq order.
  std::vector<std::string> TakeKeptLines();

  // The seq the next Emit() will use.
  int64_t next_seq() const {
    std::lock_guard<std::mutex> lock(mu_);
    return next_seq_;
  }

 private:
  EventLog(int fd, int rank, std::FILE* echo, Clock clock);

  // Constant after construction.
  const int fd_;  // -1: no file
  const int rank_;
  std::FILE* const echo_;
  const Clock clock_;

  mutable std::mutex mu_;
  int64_t next_seq_ = 1;           // Guarded by mu_.
  bool keeping_lines_ = false;     // Guarded by mu_.
  std::vector<std::string> kept_;  // Guarded by mu_.
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_EVENTS_EVENT_LOG_H_
