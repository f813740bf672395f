// What clients and agents send, checked before the coordinator acts on it
// (docs/design.md: nothing a remote side sends is trusted): sizes, names
// and numbers, each refusal an InvalidArgument that names the field.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_COORDINATOR_REQUESTS_H_
#define HPCAI500_SERVER_COORDINATOR_REQUESTS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The longest address or hostname the coordinator accepts (node names:
// common/printable.h).
inline constexpr size_t kMaxAddressBytes = 256;
// A Register's workdir and checkpoint_root (PATH_MAX, as the agent's
// launcher takes them).
inline constexpr size_t kMaxAgentPathBytes = 4096;

// The runs of a submitted spec: parsed and checked against `registry` and
// its level's rules (ParseRunSpec), then one RunSpec per repetition, with
// seeds seed, seed+1, ... InvalidArgument with the reason when the spec is
// over 1 MiB, refused, or asks for more than 100 repetitions.
absl::StatusOr<std::vector<v1::RunSpec>> ParseSubmission(
    std::string_view spec_yaml, const Registry& registry);

// InvalidArgument naming the field unless `request_id` is empty (none) or
// a request id by common/request_id.h's rule.
absl::Status ValidateRequestId(std::string_view request_id);

// InvalidArgument naming the field of a ListRuns filter no run can match (a
// text filter over 128 bytes, an unknown state, a negative before_id,
// since_ms or until_ms, until_ms not after since_ms when both are set).
absl::Status ValidateListRunsRequest(const v1::ListRunsRequest& request);

// The filter the store runs for `request`: validated as above, its limit
// 100 when unset and at most 10,000.
absl::StatusOr<v1::ListRunsRequest> ListRunsFilter(
    const v1::ListRunsRequest& request);

// InvalidArgument when an agent's Register has a bad node name (IsNodeName,
// common/printable.h), slots outside
// 1..4096, an address, hostname, cpu or gpu count out of range, a workdir
// or checkpoint_root over kMaxAgentPathBytes, an iface over
// kMaxAddressBytes, a control character in the address, hostname,
// workdir, checkpoint_root, iface or a label (they are printed), or an
// inventory beyond its bounds ("register:
// inventory: ...", see common/inventory.h: devices, versions, text sizes).
absl::Status ValidateRegister(const v1::Register& request);

// The rendezvous host of rank 0's node `node`: the reported host, else the
// node's address. InvalidArgument, worded to fail the run with, when the
// agent reported an error or a port outside 1..65535, or when there is no
// usable host (empty or over kMaxAddressBytes).
absl::StatusOr<std::string> RendezvousHost(const v1::PortReserved& port,
                                           const v1::Node& node);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_REQUESTS_H_
