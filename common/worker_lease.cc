#include "common/worker_lease.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "common/numbers.h"
#include "common/stop_threads.h"

namespace hpcai500 {

std::string FormatLease(int64_t deadline_ms) {
  return std::to_string(deadline_ms) + "\n";
}

std::optional<int64_t> ParseLease(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  // ParseInt allows blanks and a sign; a lease is plain digits.
  if (text.empty() || text.size() > 18) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return ParseInt(std::string(text), 0, INT64_MAX);
}

std::optional<int64_t> ReadLeaseFile(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return ParseLease(text.str());
}

int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Lease::Lease(std::string path, std::optional<int64_t> first)
    : path_(std::move(path)), deadline_ms_(first) {}

std::string Lease::Describe() const {
  if (path_.empty()) return "no --lease-file: running without a lease";
  if (!enforced()) {
    return "no lease in " + path_ +
           " at start (a rank its agent has not seen yet): running without "
           "a lease";
  }
  return "following lease " + path_ +
         " (stops when its agent no longer renews it)";
}

std::string Lease::Expired(std::optional<int64_t> read, int64_t now_ms) {
  if (!enforced()) return "";
  if (read) deadline_ms_ = read;
  if (now_ms < *deadline_ms_) return "";
  return "lease " + path_ + " ran out " +
         std::to_string(now_ms - *deadline_ms_) +
         " ms ago: its agent stopped renewing it (gone, or cut off from the "
         "coordinator), so this attempt may have been given to another node";
}

LeaseWatchdog::LeaseWatchdog(Lease lease, std::chrono::milliseconds period,
                             NowMs now_ms, OnExpired on_expired,
                             HolderAlive holder_alive)
    : path_(lease.path()),
      period_(period),
      now_ms_(std::move(now_ms)),
      on_expired_(std::move(on_expired)),
      holder_alive_(std::move(holder_alive)),
      lease_(std::move(lease)) {
  if (lease_.enforced()) thread_ = std::thread([this] { Loop(); });
}

LeaseWatchdog::~LeaseWatchdog() { StopAndJoin(mu_, stop_, cv_, thread_); }

bool LeaseWatchdog::Check() {
  const std::optional<int64_t> read = ReadLeaseFile(path_);
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (expired_) return true;
    reason = lease_.Expired(read, now_ms_());
    if (reason.empty()) return false;
    if (holder_alive_ && holder_alive_()) return false;
    expired_ = true;
  }
  on_expired_(reason);
  return true;
}

void LeaseWatchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (cv_.wait_for(lock, period_, [this] { return stop_; })) return;
    lock.unlock();
    const bool expired = Check();
    lock.lock();
    if (expired) return;
  }
}

}  // namespace hpcai500
