// Where one rank's epoch time goes: the trainer wraps each part of a step in
// a StepTimer, and the EpochClock sums them per phase for
// hpcai500_epoch_stats. On CUDA a phase is host time: device work shows up
// in the phase where the host next waits for it (no step synchronises; the
// epoch's totals, read at its end, do).
//
// Thread-safety: not thread-safe; the training thread owns its clock.
#ifndef HPCAI500_WORKER_METRICS_TIMING_H_
#define HPCAI500_WORKER_METRICS_TIMING_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <utility>

namespace hpcai500::worker {

// Seconds on a monotonic clock, from an arbitrary origin.
inline double MonotonicSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum class Phase {
  kInputWait,  // waiting for the batch: index, normalise, copy to device
  kCompute,    // forward, backward, optimizer step
  kCommWait,   // waiting for gradient collectives (helper "dist")
  kEval,       // evaluation passes
};

// Sums seconds per phase since Reset(), and the seconds elapsed in all.
class EpochClock {
 public:
  using Now = std::function<double()>;

  // `now` gives monotonic seconds; tests pass a fake.
  explicit EpochClock(Now now = MonotonicSeconds) : now_(std::move(now)) {
    Reset();
  }

  // Zeroes every phase and restarts the elapsed time.
  void Reset() {
    totals_.fill(0);
    start_ = now_();
  }
  double now() const { return now_(); }
  void Add(Phase phase, double seconds) {
    totals_[static_cast<size_t>(phase)] += seconds;
  }
  double seconds(Phase phase) const {
    return totals_[static_cast<size_t>(phase)];
  }
  // Seconds since Reset(), whatever phase they were spent in.
  double elapsed() const { return now_() - start_; }

 private:
  Now now_;
  double start_ = 0;
  std::array<double, 4> totals_{};
};

// Adds the time from construction to Stop() (or destruction) to one phase
// of `clock`, which must outlive it.
class StepTimer {
 public:
  StepTimer(EpochClock* clock, Phase phase)
      : clock_(clock), phase_(phase), start_(clock->now()) {}
  ~StepTimer() { Stop(); }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  // Books the time so far; later calls do nothing. Returns the seconds
  // booked by this call.
  double Stop() {
    if (clock_ == nullptr) return 0;
    const double seconds = clock_->now() - start_;
    clock_->Add(phase_, seconds);
    clock_ = nullptr;
    return seconds;
  }

 private:
  EpochClock* clock_;
  const Phase phase_;
  const double start_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_METRICS_TIMING_H_
