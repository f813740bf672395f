// `hpcai500 preflight`: see preflight_command.h.
#include "cli/commands/preflight_command.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/client/exit_codes.h"
#include "cli/text/format.h"
#include "common/event_keys.h"
#include "common/printable.h"

namespace hpcai500 {
namespace {

namespace keys = event_keys;

// The figure's value with 3 significant digits, or "-".
std::string Figure(const v1::PreflightResult& r, const char* name) {
  auto it = r.figures().find(name);
  return it == r.figures().end() ? "-" : absl::StrFormat("%.3g", it->second);
}

std::string Verdict(const v1::PreflightResult& r) {
  if (!r.error().empty()) return absl::StrCat("failed: ", r.error());
  if (r.drained()) return "FLAGGED, drained";
  return r.flagged() ? "FLAGGED" : "ok";
}

}  // namespace

std::string FormatPreflight(const v1::PreflightResponse& response) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::PreflightResult& r : response.results()) {
    rows.push_back({r.node(), r.device().empty() ? "-" : r.device(),
                    Figure(r, keys::kPreflightGemmGflops),
                    Figure(r, keys::kPreflightMemoryGbps),
                    Figure(r, keys::kPreflightHostToDeviceGbps),
                    Figure(r, keys::kPreflightAllReduceGbps),
                    absl::StrFormat("%.1f", r.seconds()), Verdict(r)});
  }
  std::string text =
      FormatTable({"node", "device", "gemm GFLOP/s", "memory GB/s", "h2d GB/s",
                   "all-reduce bus GB/s", "seconds", "verdict"},
                  rows, /*right_aligned=*/{2, 3, 4, 5, 6});
  for (const v1::PreflightResult& r : response.results()) {
    if (!r.flagged()) continue;
    absl::StrAppend(&text, "  ", EscapeLine(r.node()), ": ",
                    EscapeLine(r.evidence()), "\n");
  }
  return text;
}

int RunPreflight(const CommandContext& context,
                 const std::vector<std::string>& nodes,
                 const std::string& queue, bool json) {
  v1::PreflightRequest request;
  for (const std::string& node : nodes) request.add_nodes(node);
  request.set_queue(queue);
  v1::PreflightResponse response;
  const grpc::Status status = context.client.Unary(
      &v1::ClientService::StubInterface::Preflight, request, &response);
  if (!status.ok()) return context.client.ReportError("preflight", status);
  if (json) {
    absl::StatusOr<std::string> text = FormatJson(response);
    if (!text.ok()) {
      context.err << "hpcai500: " << text.status().message() << "\n";
      return kExitFailed;
    }
    context.out << *text;
  } else {
    context.out << FormatPreflight(response);
  }
  for (const v1::PreflightResult& r : response.results()) {
    if (r.flagged() || !r.error().empty()) return kExitFailed;
  }
  return kExitOk;
}

}  // namespace hpcai500
