// Stopping a thread that waits on a condition variable, the one way: set the
// stop flag under the waiters' mutex (so no waiter misses it between its
// check and its wait), wake them all, then join. Header-only and std-only:
// the worker's watchdogs and loaders use it as well as common/'s.
#ifndef HPCAI500_COMMON_STOP_THREADS_H_
#define HPCAI500_COMMON_STOP_THREADS_H_

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace hpcai500 {

inline void SignalStop(std::mutex& mu, bool& stop,
                       std::condition_variable& wake) {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  wake.notify_all();
}

inline void StopAndJoin(std::mutex& mu, bool& stop,
                        std::condition_variable& wake, std::thread& thread) {
  SignalStop(mu, stop, wake);
  if (thread.joinable()) thread.join();
}

inline void StopAndJoin(std::mutex& mu, bool& stop,
                        std::condition_variable& wake,
                        std::vector<std::thread>& threads) {
  SignalStop(mu, stop, wake);
  for (std::thread& thread : threads) {
    if (thread.joinable()) thread.join();
  }
  threads.clear();
}

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_STOP_THREADS_H_
