// The Store's statement helpers, shared by the files that define its
// methods (store.cc, store_runs.cc, store_records.cc): one write with its
// arguments bound, one count, and a body in one write transaction. Internal
// to server/store/.
#ifndef HPCAI500_SERVER_STORE_INTERNAL_STORE_WRITES_H_
#define HPCAI500_SERVER_STORE_INTERNAL_STORE_WRITES_H_

#include <sqlite3.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "server/store/internal/sqlite_statement.h"
#include "server/store/store.h"

namespace hpcai500 {

template <typename... Args>
absl::Status Store::Write(const char* sql, const std::string& what,
                          const Args&... args) {
  server_internal::SqliteStatement write(db_, sql);
  if (!write.prepared() || write.BindAll(args...).Step() != SQLITE_DONE) {
    return Error(what);
  }
  NoteWrite(SQLITE_OK, absl::OkStatus());
  return absl::OkStatus();
}

template <typename... Args>
absl::StatusOr<int64_t> Store::Count(const char* sql, const std::string& what,
                                     const Args&... args) {
  server_internal::SqliteStatement count(db_, sql);
  if constexpr (sizeof...(Args) > 0) count.BindAll(args...);
  if (count.Step() != SQLITE_ROW) return Error(what);
  return count.Int(0);
}

template <typename Body>
auto Store::InTransaction(const Body& body) -> decltype(body()) {
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto result = body();
  if (result.ok()) {
    absl::Status committed = Exec("COMMIT");
    if (committed.ok()) {
      NoteWrite(SQLITE_OK, absl::OkStatus());
      return result;
    }
    result = std::move(committed);
  }
  Exec("ROLLBACK").IgnoreError();
  return result;
}

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_STORE_INTERNAL_STORE_WRITES_H_
