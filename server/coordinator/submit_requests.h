// Idempotent submits: a client sends an id with each submit
// (SubmitRequest.request_id) and the same id with each retry of it, so a
// submit whose answer was lost is answered again instead of stored twice
// (Slurm's job-id idempotence, an idempotency key as Kubernetes and Stripe
// take one). The id is stored with the runs, in their transaction
// (Store::CreateSubmissions); this is what a submit with a known id becomes.
//
// Thread-safe: free functions; the Store is thread-safe.
#ifndef HPCAI500_SERVER_COORDINATOR_SUBMIT_REQUESTS_H_
#define HPCAI500_SERVER_COORDINATOR_SUBMIT_REQUESTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"
#include "server/store/store.h"

namespace hpcai500 {

// The request id `request_id` for a submit of `spec_yaml` as the store keeps
// it (its suite name still unset); nullopt for an empty id (no
// idempotence: every such submit is new).
std::optional<Store::SubmitRequestId> SubmitRequestIdFor(
    const std::string& request_id, std::string_view spec_yaml);

// What `store` remembers of `request` from `user` at `now_ms`: nullopt when
// nothing or no request (a new submit); else the first submit's answer,
// marked replayed (logged, nothing stored); AlreadyExists naming the id and
// the first submission when that one's spec text differs.
absl::StatusOr<std::optional<v1::SubmitResponse>> ReplayedSubmit(
    Store& store, const std::string& user,
    const std::optional<Store::SubmitRequestId>& request, int64_t now_ms);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_SUBMIT_REQUESTS_H_
