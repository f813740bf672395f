// A queue that one or more producer threads fill and one consumer thread
// drains, waiting with a timeout, until someone closes it: the hand-off
// between a gRPC stream's reading thread and the thread that acts on what it
// read (the agent's inbox).
//
// Thread-safe: every method may be called from any thread; waits release the
// mutex, and nothing is called back.
#ifndef HPCAI500_COMMON_CLOSABLE_QUEUE_H_
#define HPCAI500_COMMON_CLOSABLE_QUEUE_H_

#include <deque>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hpcai500 {

template <typename T>
class ClosableQueue {
 public:
  ClosableQueue() = default;
  ClosableQueue(const ClosableQueue&) = delete;
  ClosableQueue& operator=(const ClosableQueue&) = delete;

  // Appends `item`. Items pushed after Close() are still kept: TakeAll()
  // returns them, Pop() does not.
  void Push(T item) {
    absl::MutexLock lock(&mu_);
    items_.push_back(std::move(item));
  }

  // Marks the queue closed and wakes every waiter. Idempotent.
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  // Waits up to `timeout` for an item or the close, then returns the oldest
  // item. Returns nullopt on timeout, and once the queue is closed (items
  // still queued then are left in it). Sets `*closed` (not null) to whether
  // the queue is closed.
  std::optional<T> Pop(absl::Duration timeout, bool* closed) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &ClosableQueue::Ready), timeout);
    *closed = closed_;
    if (closed_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Waits up to `timeout` for an item or the close, then takes every queued
  // item, oldest first (none on timeout). Sets `*closed` (not null) to
  // whether the queue is closed; items queued before the close are still
  // returned.
  std::deque<T> TakeAll(absl::Duration timeout, bool* closed) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &ClosableQueue::Ready), timeout);
    *closed = closed_;
    return std::exchange(items_, {});
  }

 private:
  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || !items_.empty();
  }

  absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_CLOSABLE_QUEUE_H_
