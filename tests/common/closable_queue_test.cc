#include "common/closable_queue.h"

#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;

TEST(ClosableQueue, PopsInOrderAndTimesOutWhenEmpty) {
  ClosableQueue<int> queue;
  queue.Push(1);
  queue.Push(2);
  bool closed = true;
  EXPECT_EQ(queue.Pop(absl::ZeroDuration(), &closed), 1);
  EXPECT_FALSE(closed);
  EXPECT_EQ(queue.Pop(absl::ZeroDuration(), &closed), 2);
  const absl::Time start = absl::Now();
  EXPECT_EQ(queue.Pop(absl::Milliseconds(20), &closed), std::nullopt);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(15));
  EXPECT_FALSE(closed);
}

TEST(ClosableQueue, TakeAllReturnsEverythingQueuedEvenAfterTheClose) {
  ClosableQueue<int> queue;
  queue.Push(1);
  queue.Push(2);
  queue.Close();
  bool closed = false;
  EXPECT_THAT(queue.TakeAll(absl::Seconds(5), &closed), ElementsAre(1, 2));
  EXPECT_TRUE(closed);
  EXPECT_TRUE(queue.TakeAll(absl::Seconds(5), &closed).empty());
}

TEST(ClosableQueue, PopGivesNothingOnceClosed) {
  ClosableQueue<int> queue;
  queue.Push(1);
  queue.Close();
  bool closed = false;
  EXPECT_EQ(queue.Pop(absl::Seconds(5), &closed), std::nullopt);
  EXPECT_TRUE(closed);
}

TEST(ClosableQueue, CloseWakesAWaitingConsumer) {
  ClosableQueue<int> queue;
  std::thread closer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    queue.Close();
  });
  bool closed = false;
  const absl::Time start = absl::Now();
  EXPECT_EQ(queue.Pop(absl::Seconds(30), &closed), std::nullopt);
  EXPECT_TRUE(closed);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  closer.join();
}

TEST(ClosableQueue, HandsEveryItemOfManyProducersToOneConsumer) {
  ClosableQueue<int> queue;
  constexpr int kProducers = 4;
  constexpr int kItems = 500;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&queue, p] {
      for (int i = 0; i < kItems; ++i) queue.Push(p * kItems + i);
    });
  }
  std::vector<int> seen(kProducers * kItems, 0);
  int received = 0;
  bool closed = false;
  while (received < kProducers * kItems) {
    for (int item : queue.TakeAll(absl::Seconds(5), &closed)) {
      ++seen[item];
      ++received;
    }
    ASSERT_FALSE(closed);
  }
  for (std::thread& t : producers) t.join();
  for (int count : seen) EXPECT_EQ(count, 1);
}

}  // namespace
}  // namespace hpcai500
