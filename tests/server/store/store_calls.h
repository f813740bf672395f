// One-row forms of the Store's batch calls, for tests that store one
// submission or one event: each is the batch call hpcai500d makes
// (Store::CreateSubmissions, Store::InsertEvents) with a batch of one.
#ifndef HPCAI500_TESTS_SERVER_STORE_STORE_CALLS_H_
#define HPCAI500_TESTS_SERVER_STORE_STORE_CALLS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"
#include "server/store/store.h"

namespace hpcai500 {

// Stores the one submission of `spec_yaml` (its runs `run_specs`) of `user`
// in `queue` at `priority`; returns its id and run ids.
inline absl::StatusOr<v1::SubmitResponse> CreateSubmission(
    Store& store, const std::string& spec_yaml,
    const std::vector<v1::RunSpec>& run_specs, int64_t now_ms,
    const std::string& user = "", const std::string& queue = "",
    int32_t priority = 0) {
  absl::StatusOr<std::vector<v1::SubmitResponse>> stored =
      store.CreateSubmissions(
          {Store::NewSubmission{spec_yaml, run_specs, queue, priority}}, now_ms,
          user);
  if (!stored.ok()) return stored.status();
  return std::move(stored->front());
}

// Stores event (run, attempt, rank, seq) as InsertEvents stores each row.
inline absl::StatusOr<EventDisposition> InsertEvent(
    Store& store, int64_t run_id, int32_t attempt, int32_t rank, int64_t seq,
    const std::string& line, const std::string& error) {
  absl::StatusOr<std::vector<EventDisposition>> dispositions =
      store.InsertEvents({EventRow{run_id, attempt, rank, seq, line, error}});
  if (!dispositions.ok()) return dispositions.status();
  return dispositions->front();
}

}  // namespace hpcai500

#endif  // HPCAI500_TESTS_SERVER_STORE_STORE_CALLS_H_
