// The lease an agent gives the workers of one attempt: a file in the
// attempt's folder (agent/attempts/attempt_layout.h) that the agent
// rewrites, atomically, every second with the wall-clock time until which
// those workers may train, and that each worker reads (--lease-file, through
// LeaseWatchdog below). An agent that dies or is cut off stops renewing it,
// and its workers stop at the deadline, no later than the coordinator declares
// the node lost, instead of training on beside the run's next attempt.
//
// The file holds one line: the deadline in milliseconds since the Unix
// epoch. The worker's side: Lease reads the file and says whether the
// deadline passed; LeaseWatchdog checks it from a thread of its own and on
// demand (before a checkpoint is written), and calls its handler once when
// the lease ran out, which in hpcai500-worker ends the process
// (kLeaseExpiredExitCode) without writing anything more.
//
// A lease is enforced only when its file exists when the worker starts: a
// worker run by hand has no --lease-file, and a rank that mpirun or srun
// started on another node before that node's agent wrote its lease runs
// without one (it says so on stderr). Once read, a deadline holds until a
// later one is read: a file that disappears or cannot be read is not
// renewed, so it runs out.
//
// Standard library only: the worker links it, and the sanitizer builds
// (which have no worker) test it. Thread-safety: per type below.
#ifndef HPCAI500_COMMON_WORKER_LEASE_H_
#define HPCAI500_COMMON_WORKER_LEASE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace hpcai500 {

// The lease file's name in its attempt folder.
inline constexpr char kLeaseFileName[] = "lease";

// The exit code of a worker that stopped because its lease ran out. The
// coordinator takes it for a lost worker (a new attempt), not a failed run
// (common/run_state.h). EX_TEMPFAIL: a code a training program's own
// failure does not use, unlike the small ones (a rank failing with exit 3
// must fail its run, not requeue it).
inline constexpr int kLeaseExpiredExitCode = 75;

// "1700000000123\n": the file's contents for `deadline_ms` (>= 0).
std::string FormatLease(int64_t deadline_ms);

// The deadline of a lease file's contents: plain digits, an optional final
// newline; nullopt for anything else (an empty or foreign file).
std::optional<int64_t> ParseLease(std::string_view text);

// The deadline in the lease file at `path`; nullopt when the file is
// missing, unreadable or holds no lease.
std::optional<int64_t> ReadLeaseFile(const std::string& path);

// The deadline logic over what was read; touches no disk.
// Thread-compatible: LeaseWatchdog serializes its use.
class Lease {
 public:
  // `path` is the --lease-file ("" when none) and `first` what ReadLeaseFile
  // gave for it at start: without a deadline then, none is enforced.
  Lease(std::string path, std::optional<int64_t> first);

  bool enforced() const { return deadline_ms_.has_value(); }
  const std::string& path() const { return path_; }
  // One line for the worker's stderr: the lease it follows, or why none.
  std::string Describe() const;

  // Takes what the file held at a later look (nullopt: the last deadline
  // read holds) and returns "" while `now_ms` (Unix milliseconds) is before
  // the deadline, else why the worker must stop ("lease PATH ran out N ms
  // ago: its agent stopped renewing it ..."). Always "" when not enforced.
  std::string Expired(std::optional<int64_t> read, int64_t now_ms);

 private:
  std::string path_;
  std::optional<int64_t> deadline_ms_;
};

// Wall-clock time as the agent writes it: milliseconds since the Unix epoch.
int64_t UnixNowMs();

// Thread-safe: Check() may be called from any thread.
class LeaseWatchdog {
 public:
  using OnExpired = std::function<void(const std::string& reason)>;
  using NowMs = std::function<int64_t()>;
  using HolderAlive = std::function<bool()>;

  // Checks `lease` every `period` on a thread of its own, when the lease is
  // enforced (no thread otherwise), and calls `on_expired` once, on that
  // thread or on Check()'s caller, when it ran out. `now_ms` gives Unix
  // milliseconds (UnixNowMs; a fake in tests). `holder_alive`, when given,
  // says whether the agent that started the worker still runs: while it
  // does, a lease that ran out does not count, since that agent fences its
  // workers itself (a busy agent can renew late; only a gone one cannot
  // stop its workers).
  LeaseWatchdog(Lease lease, std::chrono::milliseconds period, NowMs now_ms,
                OnExpired on_expired, HolderAlive holder_alive = nullptr);
  ~LeaseWatchdog();
  LeaseWatchdog(const LeaseWatchdog&) = delete;
  LeaseWatchdog& operator=(const LeaseWatchdog&) = delete;

  // Checks now (before a write that must not happen past the deadline).
  // Returns true when the lease ran out (on_expired was called, now or
  // before); the caller then writes nothing.
  bool Check();

 private:
  void Loop();

  // Constant after construction.
  const std::string path_;
  const std::chrono::milliseconds period_;
  const NowMs now_ms_;
  const OnExpired on_expired_;
  const HolderAlive holder_alive_;

  // The file is read without the lock; only what was read is compared
  // under it, and on_expired_ is called after it is released.
  std::mutex mu_;
  std::condition_variable cv_;
  Lease lease_;           // Guarded by mu_.
  bool expired_ = false;  // Guarded by mu_.
  bool stop_ = false;     // Guarded by mu_.
  std::thread thread_;
};

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_WORKER_LEASE_H_
