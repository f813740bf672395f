#include "agent/event_tailer.h"

#include <string>
#include <vector>

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
