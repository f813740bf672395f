// `hpcai500 history`: accounting rows, their table and JSON, and the
// --since/--until times (cli/text/history.h).
#include "cli/text/history.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/text/format.h"
#include "common/run_state.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

constexpr double kMsPerHour = 3'600'000.0;

// Where an unfinished interval started at `start_ms` ends: now while the run
// is active, the run's end once it ended (never before the start).
int64_t OpenEnd(const v1::Run& run, int64_t start_ms, int64_t now_ms) {
  const int64_t end = IsTerminal(run.state()) ? run.finished_ms() : now_ms;
  return std::max(start_ms, end);
}

// "2026-12-03T10:00:00.000Z", or null for 0 (never set).
nlohmann::ordered_json IsoTime(int64_t unix_ms) {
  if (unix_ms == 0) return nullptr;
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

nlohmann::ordered_json MsOrNull(int64_t unix_ms) {
  if (unix_ms == 0) return nullptr;
  return unix_ms;
}

// "7d" -> 7 days; nullopt when `text` is not a positive count and a unit.
std::optional<absl::Duration> ParseAgo(absl::string_view text) {
  if (text.size() < 2) return std::nullopt;
  int64_t count = 0;
  if (!absl::SimpleAtoi(text.substr(0, text.size() - 1), &count) ||
      count <= 0 || !absl::ascii_isdigit(text.front())) {
    return std::nullopt;
  }
  switch (text.back()) {
    case 's':
      return absl::Seconds(count);
    case 'm':
      return absl::Minutes(count);
    case 'h':
      return absl::Hours(count);
    case 'd':
      return absl::Hours(24 * count);
    case 'w':
      return absl::Hours(24 * 7 * count);
    default:
      return std::nullopt;
  }
}

}  // namespace

double NodeHours(const v1::Run& run, int64_t now_ms) {
  double node_ms = 0;
  for (const v1::Attempt& attempt : run.attempts()) {
    if (attempt.started_ms() <= 0) continue;
    const int64_t end = attempt.finished_ms() > 0
                            ? attempt.finished_ms()
                            : OpenEnd(run, attempt.started_ms(), now_ms);
    node_ms +=
        static_cast<double>(attempt.nodes_size()) *
        static_cast<double>(std::max<int64_t>(0, end - attempt.started_ms()));
  }
  return node_ms / kMsPerHour;
}

HistoryRow HistoryRowOf(const v1::Run& run, int64_t now_ms) {
  HistoryRow row;
  row.run_id = run.id();
  row.name = run.spec().name();
  row.user = run.user();
  row.queue = run.queue();
  row.state = run.state();
  row.submit_ms = run.created_ms();
  row.start_ms = run.started_ms();
  row.end_ms = run.finished_ms();
  if (row.start_ms > 0) {
    const int64_t end =
        row.end_ms > 0 ? row.end_ms : OpenEnd(run, row.start_ms, now_ms);
    row.wall_ms = std::max<int64_t>(0, end - row.start_ms);
  }
  row.node_hours = NodeHours(run, now_ms);
  row.node_hours_saved = run.forecast().node_hours_saved();
  row.attempts = run.attempts_size();
  if (run.attempts_size() > 0) {
    const v1::Attempt& last = *run.attempts().rbegin();
    row.nodes.assign(last.nodes().begin(), last.nodes().end());
    row.exit_reason = last.error();
  }
  if (!run.error().empty()) row.exit_reason = run.error();
  return row;
}

absl::StatusOr<int64_t> ParseHistoryTime(absl::string_view text,
                                         int64_t now_ms) {
  if (std::optional<absl::Duration> ago = ParseAgo(text); ago.has_value()) {
    return now_ms - absl::ToInt64Milliseconds(*ago);
  }
  // Each form in full: absl::ParseTime alone would also take "2026-12-3".
  static constexpr std::pair<const char*, size_t> kForms[] = {
      {"%Y-%m-%d", 10}, {"%Y-%m-%dT%H:%M", 16}, {"%Y-%m-%dT%H:%M:%S", 19}};
  for (const auto& [format, length] : kForms) {
    absl::Time time;
    std::string error;
    if (text.size() == length && absl::ascii_isdigit(text.front()) &&
        absl::ParseTime(format, text, absl::UTCTimeZone(), &time, &error)) {
      return absl::ToUnixMillis(time);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", text,
      "' is not a time: expected YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] (UTC) or "
      "a duration before now such as 30m, 2h, 7d, 1w"));
}

std::string FormatElapsed(int64_t ms) {
  const int64_t seconds = std::max<int64_t>(0, ms) / 1000;
  const int64_t days = seconds / 86400;
  const std::string clock =
      absl::StrFormat("%02d:%02d:%02d", (seconds / 3600) % 24,
                      (seconds / 60) % 60, seconds % 60);
  return days > 0 ? absl::StrCat(days, "-", clock) : clock;
}

std::string FormatHistoryTable(const std::vector<HistoryRow>& rows,
                               absl::TimeZone zone) {
  std::vector<std::vector<std::string>> cells;
  auto or_dash = [](const std::string& text) {
    return text.empty() ? std::string("-") : text;
  };
  for (const HistoryRow& row : rows) {
    cells.push_back(
        {absl::StrCat(row.run_id), or_dash(row.name), or_dash(row.user),
         or_dash(row.queue), or_dash(absl::StrJoin(row.nodes, ",")),
         RunStateName(row.state), FormatTimeMs(row.submit_ms, zone),
         FormatTimeMs(row.start_ms, zone), FormatTimeMs(row.end_ms, zone),
         row.start_ms > 0 ? FormatElapsed(row.wall_ms) : "-",
         absl::StrFormat("%.2f", row.node_hours),
         row.node_hours_saved > 0
             ? absl::StrFormat("%.2f", row.node_hours_saved)
             : "-",
         absl::StrCat(row.attempts), or_dash(row.exit_reason)});
  }
  return FormatTable(
      {"id", "name", "user", "queue", "nodes", "state", "submitted", "started",
       "ended", "elapsed", "node-hours", "saved", "attempts", "exit reason"},
      cells, /*right_aligned=*/{0, 9, 10, 11, 12});
}

std::string HistoryJson(const std::vector<HistoryRow>& rows) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const HistoryRow& row : rows) {
    array.push_back({
        {"run_id", row.run_id},
        {"name", row.name},
        {"user", row.user},
        {"queue", row.queue},
        {"nodes", row.nodes},
        {"node_count", row.nodes.size()},
        {"state", RunStateName(row.state)},
        {"submit_ms", MsOrNull(row.submit_ms)},
        {"submit", IsoTime(row.submit_ms)},
        {"start_ms", MsOrNull(row.start_ms)},
        {"start", IsoTime(row.start_ms)},
        {"end_ms", MsOrNull(row.end_ms)},
        {"end", IsoTime(row.end_ms)},
        {"wall_ms", row.wall_ms},
        {"node_hours", row.node_hours},
        {"node_hours_saved", row.node_hours_saved},
        {"attempts", row.attempts},
        {"exit_reason", row.exit_reason},
    });
  }
  return array.dump(2) + "\n";
}

}  // namespace hpcai500
