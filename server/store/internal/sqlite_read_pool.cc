#include "server/store/internal/sqlite_read_pool.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hpcai500::server_internal {
namespace {

// A reader waits this long on a lock only while the writer checkpoints or
// recovers the WAL; WAL readers are otherwise never blocked.
constexpr int kReaderBusyTimeoutMs = 5000;

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteReadPool>> SqliteReadPool::Open(
    const std::string& path, int size) {
  std::vector<sqlite3*> connections;
  for (int i = 0; i < std::max(1, size); ++i) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(
        path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string message =
          db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
      sqlite3_close(db);
      for (sqlite3* open : connections) sqlite3_close(open);
      return absl::UnavailableError(absl::StrCat(
          "database ", path, ": cannot open a read connection: ", message));
    }
    sqlite3_busy_timeout(db, kReaderBusyTimeoutMs);
    connections.push_back(db);
  }
  return std::unique_ptr<SqliteReadPool>(
      new SqliteReadPool(std::move(connections)));
}

SqliteReadPool::SqliteReadPool(std::vector<sqlite3*> connections)
    : all_(connections), idle_(std::move(connections)) {}

SqliteReadPool::~SqliteReadPool() {
  for (sqlite3* db : all_) sqlite3_close(db);
}

SqliteReadPool::Lease SqliteReadPool::Acquire() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::vector<sqlite3*>* idle) { return !idle->empty(); }, &idle_));
  sqlite3* db = idle_.back();
  idle_.pop_back();
  return Lease(this, db);
}

SqliteReadPool::Lease::~Lease() {
  if (db_ == nullptr) return;
  absl::MutexLock lock(&pool_->mu_);
  pool_->idle_.push_back(db_);
}

}  // namespace hpcai500::server_internal
