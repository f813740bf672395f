#include "server/coordinator/requests.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/inventory.h"
#include "common/limits.h"
#include "common/printable.h"
#include "common/request_id.h"
#include "common/status_macros.h"
#include "methodology/spec.h"

namespace hpcai500 {
namespace {

constexpr int kMaxSlots = 4096;
constexpr int kMaxLabels = 64;
constexpr size_t kMaxLabelBytes = 128;
constexpr int kDefaultListLimit = 100;
constexpr int kMaxListLimit = 10'000;
// A ListRuns text filter longer than this names no run (spec names are at
// most 64 bytes).
constexpr size_t kMaxListFilterBytes = 128;

}  // namespace

absl::StatusOr<std::vector<v1::RunSpec>> ParseSubmission(
    std::string_view spec_yaml, const Registry& registry) {
  if (spec_yaml.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", spec_yaml.size(), " bytes is over the limit of ",
                     kMaxSpecBytes));
  }
  ASSIGN_OR_RETURN(v1::RunSpec spec, ParseRunSpec(spec_yaml, registry));
  const int repetitions = std::max(1, spec.repetitions());
  if (repetitions > kMaxRepetitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'repetitions': must be at most ", kMaxRepetitions,
                     ", got ", repetitions));
  }
  std::vector<v1::RunSpec> run_specs;
  for (int i = 0; i < repetitions; ++i) {
    v1::RunSpec run_spec = spec;
    run_spec.set_repetitions(repetitions);
    run_spec.set_seed(spec.seed() + i);
    run_specs.push_back(std::move(run_spec));
  }
  return run_specs;
}

absl::Status ValidateRequestId(std::string_view request_id) {
  if (request_id.empty()) return absl::OkStatus();
  absl::Status checked = CheckRequestId(request_id);
  if (checked.ok()) return checked;
  return absl::InvalidArgumentError(
      absl::StrCat("field 'request_id': ", checked.message()));
}

absl::Status ValidateListRunsRequest(const v1::ListRunsRequest& request) {
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string&>{"name", request.name()},
        {"workload", request.workload()},
        {"config", request.config()},
        {"user", request.user()},
        {"queue", request.queue()}}) {
    if (value.size() > kMaxListFilterBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("list runs: '", field, "' is longer than ",
                       kMaxListFilterBytes, " bytes"));
    }
  }
  if (!v1::RunState_IsValid(request.state())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "list runs: 'state' ", request.state(), " is not a run state"));
  }
  if (request.before_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("list runs: 'before_id' must not be negative, got ",
                     request.before_id()));
  }
  for (const auto& [field, value] :
       {std::pair<const char*, int64_t>{"submission_id",
                                        request.submission_id()},
        std::pair<const char*, int64_t>{"since_ms", request.since_ms()},
        {"until_ms", request.until_ms()}}) {
    if (value < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "list runs: '", field, "' must not be negative, got ", value));
    }
  }
  if (request.since_ms() > 0 && request.until_ms() > 0 &&
      request.until_ms() <= request.since_ms()) {
    return absl::InvalidArgumentError(
        absl::StrCat("list runs: 'until_ms' (", request.until_ms(),
                     ") must be after 'since_ms' (", request.since_ms(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ListRunsRequest> ListRunsFilter(
    const v1::ListRunsRequest& request) {
  RETURN_IF_ERROR(ValidateListRunsRequest(request));
  v1::ListRunsRequest filter = request;
  if (filter.limit() <= 0) filter.set_limit(kDefaultListLimit);
  filter.set_limit(std::min(filter.limit(), kMaxListLimit));
  return filter;
}

absl::Status ValidateRegister(const v1::Register& request) {
  if (!IsNodeName(request.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("register: node name '",
                     EscapeLine(request.name().substr(0, kMaxNodeNameBytes)),
                     "' must be ", kNodeNameRule));
  }
  if (request.slots() < 1 || request.slots() > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("register: slots must be between 1 and ", kMaxSlots,
                     ", got ", request.slots()));
  }
  if (request.address().size() > kMaxAddressBytes ||
      request.hostname().size() > kMaxAddressBytes || request.cpus() < 0 ||
      request.gpus() < 0) {
    return absl::InvalidArgumentError(
        "register: address, hostname, cpus or gpus out of range");
  }
  // Handed on to other agents in launcher runs (LaunchNode): bounded here,
  // their form checked by the agent that launches.
  auto at_most = [](absl::string_view field, const std::string& value,
                    size_t most) -> absl::Status {
    if (value.size() <= most) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "register: ", field, " is ", value.size(), " bytes; at most ", most));
  };
  RETURN_IF_ERROR(at_most("workdir", request.workdir(), kMaxAgentPathBytes));
  RETURN_IF_ERROR(at_most("checkpoint_root", request.checkpoint_root(),
                          kMaxAgentPathBytes));
  RETURN_IF_ERROR(at_most("iface", request.iface(), kMaxAddressBytes));
  if (request.labels_size() > kMaxLabels) {
    return absl::ResourceExhaustedError(
        absl::StrCat("register: ", request.labels_size(),
                     " labels; a node may have at most ", kMaxLabels));
  }
  for (const auto& [key, value] : request.labels()) {
    if (key.empty() || key.size() > kMaxLabelBytes ||
        value.size() > kMaxLabelBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("register: label keys must be 1 to ", kMaxLabelBytes,
                       " bytes and values at most as long, got '",
                       EscapeControlCharacters(key.substr(0, 40), false), "'"));
    }
  }
  // Printed by `hpcai500 nodes`, the pages and the log: printable only.
  auto printable = [](absl::string_view field,
                      const std::string& value) -> absl::Status {
    if (!HasControlCharacter(value)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("register: ", field, " '",
                     EscapeControlCharacters(value.substr(0, 64), false),
                     "' holds a control character"));
  };
  RETURN_IF_ERROR(printable("address", request.address()));
  RETURN_IF_ERROR(printable("hostname", request.hostname()));
  RETURN_IF_ERROR(printable("workdir", request.workdir()));
  RETURN_IF_ERROR(printable("checkpoint_root", request.checkpoint_root()));
  RETURN_IF_ERROR(printable("iface", request.iface()));
  for (const auto& [key, value] : request.labels()) {
    RETURN_IF_ERROR(printable("label key", key));
    RETURN_IF_ERROR(printable(absl::StrCat("label ", key), value));
  }
  if (absl::Status inventory = CheckInventory(request.inventory());
      !inventory.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("register: ", inventory.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RendezvousHost(const v1::PortReserved& port,
                                           const v1::Node& node) {
  if (!port.error().empty() || port.port() < 1 || port.port() > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "node %s could not reserve a port: %s", node.name(),
        port.error().empty() ? absl::StrCat("port ", port.port())
                             : port.error()));
  }
  std::string host = port.host().empty() ? node.address() : port.host();
  if (host.empty() || host.size() > kMaxAddressBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node ", node.name(), " reported no usable rendezvous address"));
  }
  return host;
}

}  // namespace hpcai500
