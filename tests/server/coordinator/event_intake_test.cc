#include "server/coordinator/event_intake.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/coordinator/test_events.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

v1::Event AgentEvent(int rank, int64_t seq, std::string line) {
  v1::Event event;
  event.mutable_key()->set_run_id(1);
  event.mutable_key()->set_attempt(1);
  event.set_rank(rank);
  event.set_seq(seq);
  event.set_line(std::move(line));
  return event;
}

TEST(EventIntake, ParsesALineThatMatchesItsRankAndSeq) {
  absl::StatusOr<EventLine> parsed = ParseAgentEvent(
      AgentEvent(1, 4, testing::MllogLine("run_start", "null", 1, 4)));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->key, "run_start");
}

TEST(EventIntake, RefusesAMismatchedBadOrOversizedLine) {
  absl::StatusOr<EventLine> other_rank = ParseAgentEvent(
      AgentEvent(0, 4, testing::MllogLine("run_start", "null", 1, 4)));
  EXPECT_TRUE(absl::IsInvalidArgument(other_rank.status()));
  EXPECT_THAT(other_rank.status().message(),
              HasSubstr("line says rank 1 seq 4"));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParseAgentEvent(AgentEvent(0, 1, "not an event")).status()));
  absl::StatusOr<EventLine> oversized = ParseAgentEvent(
      AgentEvent(0, 1, std::string(kMaxEventLineBytes + 1, 'x')));
  EXPECT_THAT(oversized.status().message(), HasSubstr("over the limit"));
}

TEST(EventIntake, AcksEventsOfAnUnknownRunUpToTheHighestSeqForGood) {
  const std::string path = ::testing::TempDir() + "/event_intake_test.db";
  std::remove(path.c_str());
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  AckBatch batch;
  EXPECT_EQ(batch.Build(**store).acks().acks_size(), 0);
  v1::AttemptKey key;
  key.set_run_id(77);
  key.set_attempt(2);
  batch.Note(key, /*rank=*/1, /*seq=*/5);
  batch.Note(key, /*rank=*/1, /*seq=*/3);
  batch.Note(key, /*rank=*/0, /*seq=*/1);
  const v1::CoordinatorMessage reply = batch.Build(**store);
  ASSERT_EQ(reply.acks().acks_size(), 2);
  EXPECT_EQ(reply.acks().acks(0).rank(), 0);
  EXPECT_EQ(reply.acks().acks(0).seq(), 1);
  EXPECT_EQ(reply.acks().acks(1).rank(), 1);
  EXPECT_EQ(reply.acks().acks(1).seq(), 5);
  EXPECT_EQ(reply.acks().acks(1).key().run_id(), 77);
}

}  // namespace
}  // namespace hpcai500
