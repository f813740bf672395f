// SqliteStatement: one prepared SQLite statement that finalizes itself, with
// typed binds and column reads, for Store's queries.
//
// Not thread-safe: it belongs to the caller holding the connection's lock,
// and must not outlive the connection it was prepared on.
#ifndef HPCAI500_SERVER_STORE_INTERNAL_SQLITE_STATEMENT_H_
#define HPCAI500_SERVER_STORE_INTERNAL_SQLITE_STATEMENT_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace hpcai500::server_internal {

// Bytes bound as a BLOB (a serialized proto) rather than TEXT.
struct Blob {
  std::string bytes;
};

class SqliteStatement {
 public:
  // Prepares `sql` on `db` (borrowed for the statement's life); check
  // prepared() before use.
  SqliteStatement(sqlite3* db, const char* sql)
      : prepared_(sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) ==
                  SQLITE_OK) {}
  ~SqliteStatement() { sqlite3_finalize(stmt_); }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // True when the SQL compiled.
  bool prepared() const { return prepared_; }

  // Binds are 1-based.
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, int32_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, bool v) { sqlite3_bind_int64(stmt_, i, v ? 1 : 0); }
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()),
                      SQLITE_TRANSIENT);
  }
  void Bind(int i, const Blob& v) {
    sqlite3_bind_blob(stmt_, i, v.bytes.data(),
                      static_cast<int>(v.bytes.size()), SQLITE_TRANSIENT);
  }
  // Binds `args` to ?1, ?2, ... in order.
  template <typename... Args>
  SqliteStatement& BindAll(const Args&... args) {
    int i = 0;
    (Bind(++i, args), ...);
    return *this;
  }
  // Returns SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  // Makes the statement ready to bind and run again.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) { return sqlite3_column_double(stmt_, col); }
  std::string Text(int col) {
    const void* p = sqlite3_column_blob(stmt_, col);
    int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string()
                        : std::string(static_cast<const char*>(p), n);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  const bool prepared_;
};

}  // namespace hpcai500::server_internal

#endif  // HPCAI500_SERVER_STORE_INTERNAL_SQLITE_STATEMENT_H_
