// common/stop_threads.h: a waiter on the condition variable sees the stop
// flag and ends, and StopAndJoin returns only after it has.
#include "common/stop_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace hpcai500 {
namespace {

struct Waiters {
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  std::atomic<int> ended{0};

  // Waits with no timeout: only the flag set under mu and a notify end it.
  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    wake.wait(lock, [&] { return stop; });
    ++ended;
  }
};

TEST(StopAndJoin, OneThreadWaitingWithoutATimeoutEndsAndIsJoined) {
  Waiters waiters;
  std::thread thread([&] { waiters.Wait(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  StopAndJoin(waiters.mu, waiters.stop, waiters.wake, thread);
  EXPECT_EQ(waiters.ended.load(), 1);
  EXPECT_FALSE(thread.joinable());
  // A second stop (a destructor after Stop()) is harmless.
  StopAndJoin(waiters.mu, waiters.stop, waiters.wake, thread);
}

TEST(StopAndJoin, EveryThreadOfAPoolEndsAndThePoolIsEmptied) {
  Waiters waiters;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { waiters.Wait(); });
  StopAndJoin(waiters.mu, waiters.stop, waiters.wake, threads);
  EXPECT_EQ(waiters.ended.load(), 4);
  EXPECT_TRUE(threads.empty());
}

}  // namespace
}  // namespace hpcai500
