// Sending a call again when its answer may have been lost: the connection
// broke (UNAVAILABLE: refused, reset, "Socket closed") or the deadline
// passed (DEADLINE_EXCEEDED), so the call may or may not have been done.
// Only a call that is safe to repeat is retried: a submit carries a request
// id (common/request_id.h) that makes the coordinator answer a repeat with
// the first try's runs.
//
// Thread-safe: free functions; CallWithRetries runs on the caller's thread.
#ifndef HPCAI500_CLI_CLIENT_RETRY_H_
#define HPCAI500_CLI_CLIENT_RETRY_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"

namespace hpcai500 {

// How often and how patiently: tries 2, 3, ... wait first_backoff, doubled
// each time up to max_backoff, each wait cut by up to max_cut (a fraction)
// at random so that clients a restart cut off together do not come back
// together. The defaults try 8 times over 17 to 23 s, with at most 4 s
// between tries: a coordinator down for 10 s and slow to start is reached
// by a later try (RetryWindow).
struct RetryPolicy {
  int max_tries = 8;
  absl::Duration first_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(4);
  double max_cut = 0.25;
  // Waits; tests replace it.
  std::function<void(absl::Duration)> sleep = [](absl::Duration wait) {
    absl::SleepFor(wait);
  };
};

// Whether a call that ended with `status` may not have been answered and
// is worth sending again: UNAVAILABLE and DEADLINE_EXCEEDED, but not an
// answer hpcai500d marked as its store's (CAUSE_STORE, common/error_cause.h):
// that one was answered, and a full disk stays full for longer than the
// retries would wait.
bool IsRetryable(const grpc::Status& status);

// The wait before try `next_try` (2 for the first retry) without the random
// cut: first_backoff * 2^(next_try - 2), at most max_backoff.
absl::Duration RetryBackoff(const RetryPolicy& policy, int next_try);

// The shortest time from the first try to the last: every wait cut by
// max_cut. A coordinator back within it is reached.
absl::Duration RetryWindow(const RetryPolicy& policy);

// Calls `call` until it returns a status that is not IsRetryable or
// policy.max_tries calls were made, and returns the last status. Before
// each retry, tells `retrying(next_try, status, wait)` and sleeps `wait`
// (RetryBackoff cut by up to policy.max_cut at random).
grpc::Status CallWithRetries(
    const RetryPolicy& policy, const std::function<grpc::Status()>& call,
    const std::function<void(int next_try, const grpc::Status& status,
                             absl::Duration wait)>& retrying);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLIENT_RETRY_H_
