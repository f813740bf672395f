// `hpcai500 changes`: see changes.h.
#include "cli/commands/changes.h"

#include "cli/client/exit_codes.h"
#include "cli/text/changes_text.h"
#include "cli/text/format.h"

namespace hpcai500 {

int ListChangesCommand(const CommandContext& context,
                       const v1::ListChangesRequest& request, bool json) {
  v1::ListChangesResponse response;
  const grpc::Status status = context.client.Unary(
      &v1::ClientService::StubInterface::ListChanges, request, &response);
  if (!status.ok()) return context.client.ReportError("changes", status);
  if (!json) {
    context.out << FormatChanges(response, context.client.options().time_zone);
    return kExitOk;
  }
  absl::StatusOr<std::string> text = FormatJson(response);
  if (!text.ok()) {
    context.err << "hpcai500: " << text.status().message() << "\n";
    return kExitFailed;
  }
  context.out << *text;
  return kExitOk;
}

}  // namespace hpcai500
