// Retries of a call whose answer may have been lost (cli/client/retry.h).
#include "cli/client/retry.h"

#include <algorithm>
#include <random>

#include "common/error_cause.h"

namespace hpcai500 {

bool IsRetryable(const grpc::Status& status) {
  if (CauseOf(status) == v1::ErrorCause::CAUSE_STORE) return false;
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

absl::Duration RetryBackoff(const RetryPolicy& policy, int next_try) {
  absl::Duration wait = policy.first_backoff;
  for (int i = 2; i < next_try && wait < policy.max_backoff; ++i) wait *= 2;
  return std::min(wait, policy.max_backoff);
}

absl::Duration RetryWindow(const RetryPolicy& policy) {
  absl::Duration window;
  for (int next_try = 2; next_try <= policy.max_tries; ++next_try) {
    window += RetryBackoff(policy, next_try) * (1.0 - policy.max_cut);
  }
  return window;
}

grpc::Status CallWithRetries(
    const RetryPolicy& policy, const std::function<grpc::Status()>& call,
    const std::function<void(int next_try, const grpc::Status& status,
                             absl::Duration wait)>& retrying) {
  std::minstd_rand random(std::random_device{}());
  std::uniform_real_distribution<double> cut(1.0 - policy.max_cut, 1.0);
  grpc::Status status = call();
  for (int next_try = 2; next_try <= policy.max_tries && IsRetryable(status);
       ++next_try) {
    const absl::Duration wait = RetryBackoff(policy, next_try) * cut(random);
    retrying(next_try, status, wait);
    policy.sleep(wait);
    status = call();
  }
  return status;
}

}  // namespace hpcai500
