// The Store's submit request ids: what makes a retried submit idempotent
// (store.h, SubmitRequestId).
#include <sqlite3.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/internal/store_writes.h"
#include "server/store/store.h"

namespace hpcai500 {

using Statement = server_internal::SqliteStatement;
using server_internal::Blob;

v1::SubmitResponse CombinedSubmitResponse(
    const std::vector<v1::SubmitResponse>& each, const std::string& suite) {
  v1::SubmitResponse combined;
  if (!suite.empty()) combined.set_suite(suite);
  for (const v1::SubmitResponse& one : each) {
    if (combined.submission_ids_size() == 0) {
      combined.set_submission_id(one.submission_id());
    }
    combined.add_submission_ids(one.submission_id());
    for (int64_t run_id : one.run_ids()) combined.add_run_ids(run_id);
  }
  return combined;
}

absl::Status Store::SaveSubmitRequestLocked(
    const SubmitRequestId& request, const std::string& user, int64_t now_ms,
    const v1::SubmitResponse& response) {
  // Pruned here, where a new id comes, so the table holds about a day of
  // submits without a timer of its own.
  RETURN_IF_ERROR(Write("DELETE FROM submit_requests WHERE created_ms <= ?",
                        "forgetting old submit request ids",
                        now_ms - kSubmitRequestRetentionMs));
  absl::Status saved = Write(
      "INSERT INTO submit_requests (user, request_id, spec_digest, "
      "created_ms, response) VALUES (?, ?, ?, ?, ?)",
      "storing a submit request id", user, request.id, request.spec_digest,
      now_ms, Blob{response.SerializeAsString()});
  if (!saved.ok() && sqlite3_errcode(db_) == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(
        absl::StrCat("request id '", request.id, "' is already stored"));
  }
  return saved;
}

absl::StatusOr<std::optional<Store::StoredSubmitRequest>>
Store::FindSubmitRequest(const std::string& user, const std::string& request_id,
                         int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  Statement find(db_,
                 "SELECT spec_digest, created_ms, response FROM "
                 "submit_requests WHERE user = ? AND request_id = ? AND "
                 "created_ms > ?");
  find.BindAll(user, request_id, now_ms - kSubmitRequestRetentionMs);
  const int rc = find.Step();
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return Error("reading a submit request id");
  StoredSubmitRequest stored;
  stored.spec_digest = find.Text(0);
  stored.created_ms = find.Int(1);
  if (!stored.response.ParseFromString(find.Text(2))) {
    return absl::DataLossError(absl::StrCat("database ", path_,
                                            ": submit request id '", request_id,
                                            "' has an unreadable answer"));
  }
  return stored;
}

}  // namespace hpcai500
