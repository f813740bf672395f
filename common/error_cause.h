// Why a call failed where its code alone does not say: an ErrorCause
// (proto/status_details.proto) carried inside hpcai500d as an absl::Status
// payload, from the store that refused a write (Store::Error and
// Store::Exec mark each UNAVAILABLE error CAUSE_STORE) to the one mapping of
// statuses (ToGrpcStatus), and on the wire in gRPC's status details as a
// google.rpc.Status, which the CLI reads. So the CLI tells "the coordinator
// cannot store now" from "the connection failed" by what the server said,
// not by the wording of a message.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_ERROR_CAUSE_H_
#define HPCAI500_COMMON_ERROR_CAUSE_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "proto/status_details.pb.h"

namespace hpcai500 {

// `status` (not OK) marked with `cause`.
absl::Status WithCause(absl::Status status, v1::ErrorCause::Cause cause);

// The cause `status` was marked with; CAUSE_UNSPECIFIED when none.
v1::ErrorCause::Cause CauseOf(const absl::Status& status);

// The one mapping from absl::Status to grpc::Status: same code, same text,
// and details that say the cause when it has one (CauseOf).
grpc::Status ToGrpcStatus(const absl::Status& status);

// The cause in a gRPC status's details; CAUSE_UNSPECIFIED when there are
// none or they do not parse.
v1::ErrorCause::Cause CauseOf(const grpc::Status& status);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_ERROR_CAUSE_H_
