#include "common/error_cause.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"

namespace hpcai500 {
namespace {

// The payload's type URL: the message's, as google.protobuf.Any names it.
std::string CauseTypeUrl() {
  return "type.googleapis.com/" + v1::ErrorCause::descriptor()->full_name();
}

}  // namespace

absl::Status WithCause(absl::Status status, v1::ErrorCause::Cause cause) {
  v1::ErrorCause message;
  message.set_cause(cause);
  status.SetPayload(CauseTypeUrl(), absl::Cord(message.SerializeAsString()));
  return status;
}

v1::ErrorCause::Cause CauseOf(const absl::Status& status) {
  const auto payload = status.GetPayload(CauseTypeUrl());
  v1::ErrorCause message;
  if (!payload.has_value() || !message.ParseFromString(std::string(*payload))) {
    return v1::ErrorCause::CAUSE_UNSPECIFIED;
  }
  return message.cause();
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const grpc::StatusCode code = static_cast<grpc::StatusCode>(status.code());
  std::string message(status.message());
  const v1::ErrorCause::Cause cause = CauseOf(status);
  if (cause == v1::ErrorCause::CAUSE_UNSPECIFIED) {
    return grpc::Status(code, std::move(message));
  }
  v1::RpcStatus details;
  details.set_code(static_cast<int>(code));
  details.set_message(message);
  v1::ErrorCause why;
  why.set_cause(cause);
  details.add_details()->PackFrom(why);
  return grpc::Status(code, std::move(message), details.SerializeAsString());
}

v1::ErrorCause::Cause CauseOf(const grpc::Status& status) {
  v1::RpcStatus details;
  if (status.error_details().empty() ||
      !details.ParseFromString(status.error_details())) {
    return v1::ErrorCause::CAUSE_UNSPECIFIED;
  }
  for (const google::protobuf::Any& detail : details.details()) {
    v1::ErrorCause why;
    if (detail.UnpackTo(&why)) return why.cause();
  }
  return v1::ErrorCause::CAUSE_UNSPECIFIED;
}

}  // namespace hpcai500
