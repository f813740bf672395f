// Protocol buffers as JSON for people and scripts (the CLI's --json and the
// HTTP API): proto field names (snake_case), every primitive field printed,
// enums by name, int64 as strings (the proto3 JSON mapping).
//
// Thread-safe: a free function.
#ifndef HPCAI500_COMMON_JSON_H_
#define HPCAI500_COMMON_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"

namespace hpcai500 {

// Returns the message as JSON, indented when `indent`, or Internal naming
// the message type when it cannot be encoded.
absl::StatusOr<std::string> ProtoToJson(
    const google::protobuf::Message& message, bool indent);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_JSON_H_
