// SqliteReadPool: a few read-only connections to one SQLite file in WAL
// mode, lent one caller at a time. A reader in WAL mode sees the last
// committed state and never waits for the writer's connection, so Store's
// read calls (run lists, the leaderboard) go through here rather than
// through its one writing connection and its lock.
//
// Thread-safe: Acquire may be called from any thread; it blocks while every
// connection is lent. A Lease is used by one thread and must not outlive the
// pool.
#ifndef HPCAI500_SERVER_STORE_INTERNAL_SQLITE_READ_POOL_H_
#define HPCAI500_SERVER_STORE_INTERNAL_SQLITE_READ_POOL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

struct sqlite3;

namespace hpcai500::server_internal {

class SqliteReadPool {
 public:
  // Opens `size` (>= 1) read-only connections to `path`, which must already
  // be a database in WAL mode. Unavailable naming the file when one cannot
  // be opened.
  static absl::StatusOr<std::unique_ptr<SqliteReadPool>> Open(
      const std::string& path, int size);
  ~SqliteReadPool();
  SqliteReadPool(const SqliteReadPool&) = delete;
  SqliteReadPool& operator=(const SqliteReadPool&) = delete;

  // One lent connection; returned to the pool when the Lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), db_(other.db_) {
      other.db_ = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    sqlite3* db() const { return db_; }

   private:
    friend class SqliteReadPool;
    Lease(SqliteReadPool* pool, sqlite3* db) : pool_(pool), db_(db) {}
    SqliteReadPool* pool_;
    sqlite3* db_;
  };
  // Waits for an idle connection and lends it.
  Lease Acquire();

 private:
  explicit SqliteReadPool(std::vector<sqlite3*> connections);

  // Constant after construction: every connection, closed with the pool.
  const std::vector<sqlite3*> all_;

  absl::Mutex mu_;
  std::vector<sqlite3*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpcai500::server_internal

#endif  // HPCAI500_SERVER_STORE_INTERNAL_SQLITE_READ_POOL_H_
