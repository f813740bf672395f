#include "cli/text/history.h"

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kHourMs = 3'600'000;
// 2026-12-03T00:00:00Z.
constexpr int64_t kDayMs = 1'796'256'000'000;

v1::Attempt AttemptOn(int number, std::vector<std::string> nodes,
                      int64_t started_ms, int64_t finished_ms,
                      const std::string& error = "") {
  v1::Attempt attempt;
  attempt.set_number(number);
  for (const std::string& node : nodes) attempt.add_nodes(node);
  attempt.set_started_ms(started_ms);
  attempt.set_finished_ms(finished_ms);
  attempt.set_error(error);
  return attempt;
}

// A run requeued once: attempt 1 on two nodes for an hour, lost; attempt 2
// on one node from then on.
v1::Run RequeuedRun(v1::RunState state, int64_t finished_ms) {
  v1::Run run;
  run.set_id(42);
  run.set_user("alice");
  run.set_queue("gpu");
  run.mutable_spec()->set_name("fmnist");
  run.set_state(state);
  run.set_created_ms(kDayMs - kHourMs);
  run.set_started_ms(kDayMs);
  run.set_finished_ms(finished_ms);
  *run.add_attempts() =
      AttemptOn(1, {"a", "b"}, kDayMs, kDayMs + kHourMs, "node b lost");
  *run.add_attempts() = AttemptOn(2, {"c"}, kDayMs + kHourMs, finished_ms, "");
  return run;
}

TEST(History, NodeHoursSumNodesTimesDurationOverAttempts) {
  const v1::Run ended =
      RequeuedRun(v1::RUN_STATE_SUCCEEDED, kDayMs + 3 * kHourMs);
  EXPECT_DOUBLE_EQ(NodeHours(ended, /*now_ms=*/kDayMs + 100 * kHourMs),
                   2.0 + 2.0);
}

TEST(History, RunningAttemptCountsUpToNow) {
  const v1::Run running = RequeuedRun(v1::RUN_STATE_RUNNING, 0);
  EXPECT_DOUBLE_EQ(NodeHours(running, kDayMs + kHourMs + kHourMs / 2),
                   2.0 + 0.5);
  const HistoryRow row = HistoryRowOf(running, kDayMs + 2 * kHourMs);
  EXPECT_EQ(row.wall_ms, 2 * kHourMs);
  EXPECT_EQ(row.end_ms, 0);
}

TEST(History, UnfinishedAttemptOfAnEndedRunStopsAtTheRunsEnd) {
  v1::Run cancelled;
  cancelled.set_state(v1::RUN_STATE_CANCELLED);
  cancelled.set_started_ms(kDayMs);
  cancelled.set_finished_ms(kDayMs + kHourMs);
  *cancelled.add_attempts() = AttemptOn(1, {"a", "b", "c"}, kDayMs, 0);
  *cancelled.add_attempts() = AttemptOn(2, {"a"}, 0, 0);  // never started
  EXPECT_DOUBLE_EQ(NodeHours(cancelled, kDayMs + 50 * kHourMs), 3.0);
}

TEST(History, RowTakesTheLastAttemptsNodesAndTheErrorThatEndedIt) {
  const HistoryRow row =
      HistoryRowOf(RequeuedRun(v1::RUN_STATE_SUCCEEDED, kDayMs + 3 * kHourMs),
                   kDayMs + 9 * kHourMs);
  EXPECT_EQ(row.run_id, 42);
  EXPECT_EQ(row.user, "alice");
  EXPECT_EQ(row.queue, "gpu");
  EXPECT_THAT(row.nodes, ::testing::ElementsAre("c"));
  EXPECT_EQ(row.attempts, 2);
  EXPECT_EQ(row.wall_ms, 3 * kHourMs);
  EXPECT_EQ(row.exit_reason, "") << "the last attempt ended well";

  v1::Run failed = RequeuedRun(v1::RUN_STATE_FAILED, kDayMs + 2 * kHourMs);
  failed.mutable_attempts(1)->set_error("rank 0 exited 1");
  EXPECT_EQ(HistoryRowOf(failed, 0).exit_reason, "rank 0 exited 1");
  failed.set_error("time limit 2h reached");
  EXPECT_EQ(HistoryRowOf(failed, 0).exit_reason, "time limit 2h reached");

  v1::Run queued;
  queued.set_state(v1::RUN_STATE_QUEUED);
  const HistoryRow waiting = HistoryRowOf(queued, kDayMs);
  EXPECT_EQ(waiting.wall_ms, 0);
  EXPECT_EQ(waiting.node_hours, 0);
  EXPECT_TRUE(waiting.nodes.empty());
}

TEST(History, ParsesDatesTimesAndDurationsBeforeNow) {
  const int64_t now = kDayMs + 12 * kHourMs;
  EXPECT_EQ(*ParseHistoryTime("2026-12-03", now), kDayMs);
  EXPECT_EQ(*ParseHistoryTime("2026-12-03T10:30", now),
            kDayMs + 10 * kHourMs + 30 * 60'000);
  EXPECT_EQ(*ParseHistoryTime("2026-12-03T10:30:15", now),
            kDayMs + 10 * kHourMs + 30 * 60'000 + 15'000);
  EXPECT_EQ(*ParseHistoryTime("2h", now), now - 2 * kHourMs);
  EXPECT_EQ(*ParseHistoryTime("7d", now), now - 7 * 24 * kHourMs);
  EXPECT_EQ(*ParseHistoryTime("90m", now), now - 90 * 60'000);
  EXPECT_EQ(*ParseHistoryTime("1w", now), now - 7 * 24 * kHourMs);
  EXPECT_EQ(*ParseHistoryTime("30s", now), now - 30'000);
  for (const char* bad :
       {"", "h", "0h", "-2h", "2y", "2026-12-3", "2026-12-03 10:00",
        "2026-13-01", "2026-12-03T25:00", "yesterday", "+2h"}) {
    const absl::StatusOr<int64_t> parsed = ParseHistoryTime(bad, now);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_THAT(std::string(parsed.status().message()),
                HasSubstr("expected YYYY-MM-DD"))
        << bad;
  }
}

TEST(History, ElapsedLooksLikeSacct) {
  EXPECT_EQ(FormatElapsed(0), "00:00:00");
  EXPECT_EQ(FormatElapsed(3'723'000), "01:02:03");
  EXPECT_EQ(FormatElapsed(2 * 24 * kHourMs + 5 * kHourMs + 999), "2-05:00:00");
}

TEST(History, TablePrintsOneAlignedRowPerRun) {
  std::vector<HistoryRow> rows = {HistoryRowOf(
      RequeuedRun(v1::RUN_STATE_SUCCEEDED, kDayMs + 3 * kHourMs), 0)};
  v1::Run queued;
  queued.set_id(7);
  queued.set_state(v1::RUN_STATE_QUEUED);
  queued.set_created_ms(kDayMs);
  rows.push_back(HistoryRowOf(queued, kDayMs));
  EXPECT_EQ(FormatHistoryTable(rows, absl::UTCTimeZone()),
            "id  name    user   queue  nodes  state      submitted            "
            "started              ended                 elapsed  node-hours  "
            "saved  attempts  exit reason\n"
            "42  fmnist  alice  gpu    c      succeeded  2026-12-02 23:00:00  "
            "2026-12-03 00:00:00  2026-12-03 03:00:00  03:00:00        4.00  "
            "    -         2  -\n"
            " 7  -       -      -      -      queued     2026-12-03 00:00:00  "
            "-                    -                           -        0.00  "
            "    -         0  -\n");
}

TEST(History, AnAbortedRunShowsTheNodeHoursItGaveBack) {
  v1::Run run = RequeuedRun(v1::RUN_STATE_ABORTED, kDayMs + 3 * kHourMs);
  run.mutable_forecast()->set_node_hours_saved(12.5);
  const HistoryRow row = HistoryRowOf(run, 0);
  EXPECT_EQ(row.node_hours_saved, 12.5);
  EXPECT_THAT(FormatHistoryTable({row}, absl::UTCTimeZone()),
              HasSubstr("aborted  2026-12-02"));
  EXPECT_THAT(FormatHistoryTable({row}, absl::UTCTimeZone()),
              HasSubstr("4.00  12.50"));
  const nlohmann::json json = nlohmann::json::parse(HistoryJson({row}));
  EXPECT_EQ(json[0]["state"], "aborted");
  EXPECT_DOUBLE_EQ(json[0]["node_hours_saved"].get<double>(), 12.5);
}

TEST(History, JsonIsOneArrayWithTimesInMsAndIso) {
  std::vector<HistoryRow> rows = {HistoryRowOf(
      RequeuedRun(v1::RUN_STATE_RUNNING, 0), kDayMs + 2 * kHourMs)};
  const nlohmann::json json = nlohmann::json::parse(HistoryJson(rows));
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  const nlohmann::json& row = json[0];
  EXPECT_EQ(row["run_id"], 42);
  EXPECT_EQ(row["user"], "alice");
  EXPECT_EQ(row["queue"], "gpu");
  EXPECT_EQ(row["nodes"], nlohmann::json::array({"c"}));
  EXPECT_EQ(row["node_count"], 1);
  EXPECT_EQ(row["state"], "running");
  EXPECT_EQ(row["submit_ms"], kDayMs - kHourMs);
  EXPECT_EQ(row["submit"], "2026-12-02T23:00:00.000Z");
  EXPECT_EQ(row["start"], "2026-12-03T00:00:00.000Z");
  EXPECT_TRUE(row["end_ms"].is_null());
  EXPECT_TRUE(row["end"].is_null());
  EXPECT_EQ(row["wall_ms"], 2 * kHourMs);
  EXPECT_DOUBLE_EQ(row["node_hours"].get<double>(), 2.0 + 1.0);
  EXPECT_EQ(row["attempts"], 2);
  EXPECT_EQ(HistoryJson({}), "[]\n");
}

}  // namespace
}  // namespace hpcai500
