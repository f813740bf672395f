// EventTailer: complete lines only, bad lines held and accounted for,
// acknowledged seqs persisted and skipped after a restart.
#include "agent/attempts/event_tailer.h"

#include <string>
#include <vector>

#include "common/events.h"
#include "gtest/gtest.h"
#include "tests/agent/fakes.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

v1::AttemptKey Key() {
  v1::AttemptKey key;
  key.set_run_id(7);
  key.set_attempt(1);
  return key;
}

std::vector<int64_t> Seqs(const std::vector<v1::Event>& events) {
  std::vector<int64_t> seqs;
  for (const v1::Event& e : events) seqs.push_back(e.seq());
  return seqs;
}

class EventTailerTest : public ::testing::Test {
 protected:
  std::string events_path() const { return dir_.path() + "/rank-0.events"; }
  std::string acked_path() const { return dir_.path() + "/rank-0.acked"; }
  EventTailer MakeTailer() {
    EventTailer tailer(events_path(), acked_path(), Key(), /*rank=*/0);
    EXPECT_TRUE(tailer.LoadAcked().ok());
    return tailer;
  }
  void AppendLines(int64_t first, int64_t last) {
    for (int64_t seq = first; seq <= last; ++seq) {
      AppendToFile(events_path(), EventLineText(seq, /*rank=*/0));
    }
  }

  TempDir dir_;
};

TEST_F(EventTailerTest, MissingFileYieldsNothingYet) {
  EventTailer tailer = MakeTailer();
  EXPECT_TRUE(tailer.ReadNew().empty());
  AppendLines(1, 2);
  EXPECT_EQ(Seqs(tailer.ReadNew()), (std::vector<int64_t>{1, 2}));
}

TEST_F(EventTailerTest, PartialLineIsNotSentUntilItsNewlineArrives) {
  EventTailer tailer = MakeTailer();
  std::string second = EventLineText(2, 0);
  AppendToFile(events_path(), EventLineText(1, 0) + second.substr(0, 40));
  std::vector<v1::Event> first_read = tailer.ReadNew();
  EXPECT_EQ(Seqs(first_read), (std::vector<int64_t>{1}));
  EXPECT_TRUE(tailer.ReadNew().empty());

  AppendToFile(events_path(), second.substr(40));
  std::vector<v1::Event> second_read = tailer.ReadNew();
  ASSERT_EQ(Seqs(second_read), (std::vector<int64_t>{2}));
  EXPECT_EQ(second_read[0].line() + "\n", second);
  EXPECT_EQ(second_read[0].key().run_id(), 7);
  EXPECT_EQ(second_read[0].rank(), 0);
}

TEST_F(EventTailerTest, ResendAfterReconnectCoversExactlyTheUnacked) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 5);
  ASSERT_EQ(tailer.ReadNew().size(), 5u);
  tailer.Ack(3);
  EXPECT_EQ(Seqs(tailer.Unacked()), (std::vector<int64_t>{4, 5}));
  tailer.Ack(2);  // stale: changes nothing
  EXPECT_EQ(Seqs(tailer.Unacked()), (std::vector<int64_t>{4, 5}));
  tailer.Ack(5);
  EXPECT_TRUE(tailer.all_acked());
  EXPECT_TRUE(tailer.Unacked().empty());
}

TEST_F(EventTailerTest, RestartFromPersistedAckedSeqSkipsAcknowledged) {
  {
    EventTailer before = MakeTailer();
    AppendLines(1, 5);
    ASSERT_EQ(before.ReadNew().size(), 5u);
    before.Ack(3);
  }
  AppendLines(6, 6);
  EventTailer after = MakeTailer();
  EXPECT_EQ(after.acked_seq(), 3);
  EXPECT_EQ(Seqs(after.ReadNew()), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(Seqs(after.Unacked()), (std::vector<int64_t>{4, 5, 6}));
}

TEST_F(EventTailerTest, MalformedAndForeignRankLinesAreSkipped) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(), ReadFile(std::string(HPCAI500_SOURCE_DIR) +
                                       "/tests/fixtures/events/malformed.txt"));
  AppendToFile(events_path(), EventLineText(2, /*rank=*/1));
  AppendLines(2, 2);
  EXPECT_EQ(Seqs(tailer.ReadNew()), (std::vector<int64_t>{1, 2}));
}

// A worker line cut short: what a crash mid-write leaves, then a newline.
std::string TornLine(int64_t seq) {
  return EventLineText(seq, /*rank=*/0).substr(0, 40) + "\n";
}

TEST_F(EventTailerTest, TornLineIsSentAsAnErrorRowUnderItsSeq) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(), TornLine(2));
  AppendLines(3, 3);
  std::vector<v1::Event> events = tailer.ReadNew();
  ASSERT_EQ(Seqs(events), (std::vector<int64_t>{1, 2, 3}));
  // The coordinator refuses the line, so it stores an error row for seq 2.
  EXPECT_EQ(events[1].line() + "\n", TornLine(2));
  EXPECT_FALSE(ParseEventLine(events[1].line()).ok());
  tailer.Ack(3);
  EXPECT_TRUE(tailer.all_acked());
}

TEST_F(EventTailerTest, FragmentGluedToTheNextLineFillsBothSeqs) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  // Seq 2 cut short without its newline, then seq 3 whole: one bad line.
  AppendToFile(events_path(), TornLine(2).substr(0, 40) + EventLineText(3, 0));
  AppendLines(4, 4);
  std::vector<v1::Event> events = tailer.ReadNew();
  ASSERT_EQ(Seqs(events), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_FALSE(ParseEventLine(events[1].line()).ok());
  EXPECT_FALSE(ParseEventLine(events[2].line()).ok());
  EXPECT_NE(events[2].line().find("no readable event line for seq 3"),
            std::string::npos);
}

TEST_F(EventTailerTest, BadLineFollowedByTheExpectedSeqWasNotAnEvent) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(), TornLine(2));
  AppendLines(2, 3);  // the worker wrote seq 2 again, whole
  std::vector<v1::Event> events = tailer.ReadNew();
  ASSERT_EQ(Seqs(events), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(events[1].line() + "\n", EventLineText(2, 0));
}

TEST_F(EventTailerTest, BadLastLineWaitsForTheNextGoodLine) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(), TornLine(2));
  EXPECT_EQ(Seqs(tailer.ReadNew()), (std::vector<int64_t>{1}));
  tailer.Ack(1);
  EXPECT_TRUE(tailer.all_acked());  // nothing is owed for the torn line yet
  AppendLines(3, 3);
  EXPECT_EQ(Seqs(tailer.ReadNew()), (std::vector<int64_t>{2, 3}));
}

TEST_F(EventTailerTest, OversizedLineIsSentAsAShortErrorRow) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(),
               std::string(kMaxEventLineBytes + 1000, 'x') + "\n");
  AppendLines(3, 3);
  std::vector<v1::Event> events = tailer.ReadNew();
  ASSERT_EQ(Seqs(events), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_LT(events[1].line().size(), 200u);
  EXPECT_FALSE(ParseEventLine(events[1].line()).ok());
}

TEST_F(EventTailerTest, SeqFarAheadIsABadLineNotAHugeGap) {
  EventTailer tailer = MakeTailer();
  AppendLines(1, 1);
  AppendToFile(events_path(), EventLineText(1000000000, 0));
  AppendLines(2, 2);
  EXPECT_EQ(Seqs(tailer.ReadNew()), (std::vector<int64_t>{1, 2}));
}

TEST_F(EventTailerTest, TornLineIsNoWallForTheEventsAfterIt) {
  const int64_t total = EventTailer::kMaxUnacked + 1000;
  std::string text = EventLineText(1, 0) + TornLine(2);
  for (int64_t seq = 3; seq <= total; ++seq) text += EventLineText(seq, 0);
  AppendToFile(events_path(), text);
  EventTailer tailer = MakeTailer();
  std::vector<int64_t> delivered;
  for (int round = 0; round < 10 && delivered.size() < total; ++round) {
    std::vector<v1::Event> events = tailer.ReadNew();
    for (const v1::Event& e : events) delivered.push_back(e.seq());
    // The coordinator acknowledges up to what it stored without a gap.
    if (!events.empty()) tailer.Ack(events.back().seq());
  }
  ASSERT_EQ(delivered.size(), static_cast<size_t>(total));
  for (size_t i = 0; i < delivered.size(); ++i) {
    EXPECT_EQ(delivered[i], static_cast<int64_t>(i + 1));
  }
  EXPECT_TRUE(tailer.caught_up());
  EXPECT_TRUE(tailer.all_acked());
}

TEST_F(EventTailerTest, RestartAfterAnAckedErrorRowResendsNothingOfIt) {
  {
    EventTailer before = MakeTailer();
    AppendLines(1, 1);
    AppendToFile(events_path(), TornLine(2));
    AppendLines(3, 3);
    ASSERT_EQ(before.ReadNew().size(), 3u);
    before.Ack(3);
  }
  AppendToFile(events_path(), TornLine(4));
  AppendLines(5, 5);
  EventTailer after = MakeTailer();
  EXPECT_EQ(Seqs(after.ReadNew()), (std::vector<int64_t>{4, 5}));
}

TEST_F(EventTailerTest, ReadsEveryLineOfTheWorkerFixture) {
  std::string fixture = ReadFile(std::string(HPCAI500_SOURCE_DIR) +
                                 "/tests/fixtures/events/fmnist_rank0.mllog");
  ASSERT_FALSE(fixture.empty());
  AppendToFile(events_path(), fixture);
  EventTailer tailer = MakeTailer();
  std::vector<v1::Event> events = tailer.ReadNew();
  size_t lines = std::count(fixture.begin(), fixture.end(), '\n');
  ASSERT_EQ(events.size(), lines);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  }
  ASSERT_TRUE(tailer.run_stop_status().has_value());
  EXPECT_EQ(*tailer.run_stop_status(), "success");
}

TEST_F(EventTailerTest, RunStopStatusOfAnAbortedWorker) {
  AppendToFile(events_path(),
               ReadFile(std::string(HPCAI500_SOURCE_DIR) +
                        "/tests/fixtures/events/aborted_rank0.mllog"));
  EventTailer tailer = MakeTailer();
  EXPECT_FALSE(tailer.ReadNew().empty());
  ASSERT_TRUE(tailer.run_stop_status().has_value());
  EXPECT_EQ(*tailer.run_stop_status(), "aborted");
}

TEST_F(EventTailerTest, StopsReadingWhileTooManyEventsAwaitAnAck) {
  const int64_t total = EventTailer::kMaxUnacked + 1000;
  std::string text;
  for (int64_t seq = 1; seq <= total; ++seq) text += EventLineText(seq, 0);
  AppendToFile(events_path(), text);
  EventTailer tailer = MakeTailer();
  std::vector<v1::Event> first = tailer.ReadNew();
  EXPECT_GE(first.size(), EventTailer::kMaxUnacked);
  EXPECT_LT(first.size(), static_cast<size_t>(total));
  EXPECT_FALSE(tailer.caught_up());
  tailer.Ack(first.back().seq());
  std::vector<v1::Event> rest = tailer.ReadNew();
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front().seq(), first.back().seq() + 1);
  EXPECT_EQ(rest.back().seq(), total);
  EXPECT_TRUE(tailer.caught_up());
}

}  // namespace
}  // namespace hpcai500::agent
