// A submit's request id (SubmitRequest.request_id, an idempotency key): the
// one rule the CLI checks --request-id by and the coordinator checks what it
// is sent by, and how the CLI makes a new one for each invocation.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_REQUEST_ID_H_
#define HPCAI500_COMMON_REQUEST_ID_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace hpcai500 {

// The longest request id accepted.
inline constexpr size_t kMaxRequestIdBytes = 128;

// OK when `id` is 1 to kMaxRequestIdBytes of letters, digits, '-', '_', '.'
// and ':' (a UUID, a CI job's "pipeline:job" fit; printed in logs and
// errors, so nothing else), else InvalidArgument saying so (the id quoted,
// escaped and cut short).
absl::Status CheckRequestId(std::string_view id);

// A new request id: 128 random bits from the system's source, as 32 hex
// digits, so two invocations never share one.
std::string NewRequestId();

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_REQUEST_ID_H_
