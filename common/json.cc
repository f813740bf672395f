#include "common/json.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace hpcai500 {

absl::StatusOr<std::string> ProtoToJson(
    const google::protobuf::Message& message, bool indent) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = indent;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  auto status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot encode ",
                                            message.GetTypeName(),
                                            " as JSON: ", status.ToString()));
  }
  return json;
}

}  // namespace hpcai500
