// Ranks of a world as threads of one test process: each thread has its own
// Collectives over one shared HashStore (distributed_test on the CPU,
// gpu_test on CUDA devices). Header-only.
//
// Thread-safe: RunRanksOnThreads joins every thread it starts.
#ifndef HPCAI500_TESTS_WORKER_DISTRIBUTED_RANK_THREADS_H_
#define HPCAI500_TESTS_WORKER_DISTRIBUTED_RANK_THREADS_H_

#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "worker/distributed/distributed.h"

namespace hpcai500::worker::testing {

// Runs fn(collectives) on one thread per entry of `devices` (rank r on
// devices[r]) over `backend`, each collective giving up after `timeout`;
// rethrows the first exception any rank threw, once all have ended.
inline void RunRanksOnThreads(const std::vector<torch::Device>& devices,
                              DistBackend backend,
                              std::chrono::milliseconds timeout,
                              const std::function<void(Collectives&)>& fn) {
  // LibTorch 2.11's flight recorder (one per process) adds a process
  // group's status to a map outside its lock at the group's first
  // collective: two groups of one process racing there corrupt the map (a
  // segfault about one run in 80 on a loaded machine). A worker has one
  // group per process; threads as ranks turn the recorder off before the
  // first group is made.
  setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/1);
  auto store = c10::make_intrusive<c10d::HashStore>();
  const int world = static_cast<int>(devices.size());
  std::vector<std::thread> threads;
  std::mutex mu;
  std::exception_ptr failure;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        Collectives collectives(store, rank, world, timeout, backend,
                                devices[rank]);
        fn(collectives);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace hpcai500::worker::testing

#endif  // HPCAI500_TESTS_WORKER_DISTRIBUTED_RANK_THREADS_H_
