#include "server/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/error_cause.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "server/store/internal/sqlite_read_pool.h"
#include "server/store/internal/store_queries.h"
#include "server/store/internal/store_schema.h"
#include "server/store/internal/store_writes.h"
#include "server/store/leaderboard.h"

namespace hpcai500 {
namespace {

using server_internal::kLeaderboardLevelVersion;
using server_internal::kSpecColumnsVersion;
using server_internal::kStoreMigrations;
using Statement = server_internal::SqliteStatement;

constexpr int kBusyTimeoutMs = 5000;
// Read connections: concurrent client reads (run lists, leaderboard pages,
// run pages) beyond this many wait for one another, never for the writer.
constexpr int kReadConnections = 4;

// The pid a lock file names ("" when it names none).
std::string LockHolder(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  std::string pid(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) {
    pid.pop_back();
  }
  return pid;
}

// Makes this process the one owner of the database at `db_path`: an
// exclusive flock on "<db_path>.lock", which then holds our pid. Returns the
// lock file's descriptor (the lock lasts until it is closed), or
// FailedPrecondition naming the lock file and the holder's pid when another
// process owns the database. *created says whether this call made the lock
// file (a refused start then takes it away again: ForgetLockFile).
absl::StatusOr<int> LockDatabase(const std::string& db_path, bool* created) {
  const std::string lock_path = db_path + ".lock";
  int fd =
      ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  *created = fd >= 0;
  if (fd < 0 && errno == EEXIST) {
    fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("database ", db_path, ": cannot open lock file ",
                     lock_path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = LockHolder(fd);
    ::close(fd);
    if (error != EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("database ", db_path,
                                                 ": cannot lock ", lock_path,
                                                 ": ", std::strerror(error)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("database ", db_path, " is in use by another hpcai500d",
                     holder.empty() ? "" : absl::StrCat(" (pid ", holder, ")"),
                     ": it holds the lock file ", lock_path,
                     "; one coordinator per database"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) !=
                                     static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    if (*created) ::unlink(lock_path.c_str());  // locked: nobody else's
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("database ", db_path, ": cannot write lock file ",
                     lock_path, ": ", std::strerror(error)));
  }
  return fd;
}

// The byte of the database file whose lock marks its owner: far past the
// bytes SQLite locks (from 1 GiB to 1 GiB + 512), so the two never meet.
constexpr off_t kOwnerLockByte = off_t{1} << 62;

// Makes this process the one owner of the database file itself, whatever
// path names it (a symlink, a hard link): an open-file-description lock on
// kOwnerLockByte of `db_path`, made when missing. Returns the descriptor
// (the lock lasts until it is closed: only after SQLite closed the file,
// since closing a descriptor of a file drops the process's POSIX locks on
// it, SQLite's among them), or FailedPrecondition when another process
// owns the file.
absl::StatusOr<int> LockDatabaseFile(const std::string& db_path) {
  const int fd = ::open(db_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "database ", db_path, ": cannot open: ", std::strerror(errno)));
  }
  struct flock owner = {};
  owner.l_type = F_WRLCK;
  owner.l_whence = SEEK_SET;
  owner.l_start = kOwnerLockByte;
  owner.l_len = 1;
  if (::fcntl(fd, F_OFD_SETLK, &owner) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EAGAIN && error != EACCES) {
      return absl::UnavailableError(absl::StrCat(
          "database ", db_path, ": cannot lock: ", std::strerror(error)));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", db_path,
        " is in use by another hpcai500d, which opened the same file under "
        "another path (a symlink or a hard link to it); one coordinator per "
        "database"));
  }
  return fd;
}

// Closes `lock_fd` (LockDatabase's, still locked) of the database at
// `db_path` after a refused start, first removing the lock file if this
// process `created` it: while the lock is held nobody else can be using the
// file, and one that existed before stays (it may be a running
// coordinator's, opened under another path).
void ForgetLockFile(const std::string& db_path, int lock_fd, bool created) {
  if (created) ::unlink((db_path + ".lock").c_str());
  ::close(lock_fd);
}

}  // namespace

std::string TokenKeyPath(const std::string& db_path) {
  return db_path + ".token-key";
}

int Store::SchemaVersion() {
  return static_cast<int>(sizeof(kStoreMigrations) /
                          sizeof(kStoreMigrations[0]));
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   Access access) {
  int lock_fd = -1;
  int file_lock_fd = -1;
  bool created_lock_file = false;
  if (access == Access::kOwner) {
    // The lock file first: a second hpcai500d on the same path is told
    // the first one's pid.
    ASSIGN_OR_RETURN(lock_fd, LockDatabase(path, &created_lock_file));
    absl::StatusOr<int> file_lock = LockDatabaseFile(path);
    if (!file_lock.ok()) {
      // Another path to a live database (a symlink, a hard link): its
      // lock file is this refused start's own.
      ForgetLockFile(path, lock_fd, created_lock_file);
      return file_lock.status();
    }
    file_lock_fd = *file_lock;
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    std::string message =
        db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    if (file_lock_fd >= 0) ::close(file_lock_fd);
    if (lock_fd >= 0) ForgetLockFile(path, lock_fd, created_lock_file);
    return absl::UnavailableError(
        absl::StrCat("database ", path, ": cannot open: ", message));
  }
  std::unique_ptr<Store> store(new Store(path, db, lock_fd, file_lock_fd));
  absl::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  // FULL: every commit syncs the WAL, so what a call stored (and the
  // coordinator then acknowledged) survives a power loss.
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  if (access == Access::kOwner) {
    RETURN_IF_ERROR(store->Migrate());
    RETURN_IF_ERROR(store->RefillLeaderboardOnNewRules());
  } else {
    Statement get(db, "PRAGMA user_version");
    if (!get.prepared() || get.Step() != SQLITE_ROW ||
        get.Int(0) != SchemaVersion()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database ", path, ": its schema is not this hpcai500d's (version ",
          SchemaVersion(), "); stop the running one or upgrade it first"));
    }
  }
  ASSIGN_OR_RETURN(store->readers_, server_internal::SqliteReadPool::Open(
                                        path, kReadConnections));
  return store;
}

Store::Store(std::string path, sqlite3* db, int lock_fd, int file_lock_fd)
    : path_(std::move(path)),
      lock_fd_(lock_fd),
      file_lock_fd_(file_lock_fd),
      db_(db) {}

Store::~Store() {
  readers_.reset();  // first, so the writer's close checkpoints the WAL
  {
    absl::MutexLock lock(&mu_);
    sqlite3_close(db_);
  }
  // Only now: closing a descriptor of the file would drop SQLite's locks.
  if (file_lock_fd_ >= 0) ::close(file_lock_fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases it to the next owner
}

absl::Status Store::Error(const std::string& what) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return Error(db_, what);
}

namespace {

// Whether SQLite's (extended) `code` says the file cannot be written now,
// for a reason that passes: space, I/O, a lock, memory. A bad statement, a
// constraint or a corrupt file does not pass by retrying.
bool IsTransient(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::Status Store::Error(sqlite3* db, const std::string& what) const {
  const int code = sqlite3_extended_errcode(db);
  const std::string message =
      absl::StrCat("database ", path_, ": ", what, ": ", sqlite3_errmsg(db));
  if (!IsTransient(code)) return absl::InternalError(message);
  // Marked so that clients are told it is the store, not the connection.
  absl::Status error =
      WithCause(absl::UnavailableError(message), v1::ErrorCause::CAUSE_STORE);
  NoteWrite(code, error);
  return error;
}

void Store::NoteWrite(int code, const absl::Status& error) const {
  absl::MutexLock lock(&health_mu_);
  if (code == SQLITE_OK) {
    health_.failing = false;
    health_.failing_since_ms = 0;
    health_.last_error.clear();
    return;
  }
  ++health_.write_errors;
  if (health_.failing) return;
  health_.failing = true;
  health_.failing_since_ms = absl::ToUnixMillis(absl::Now());
  health_.last_error = std::string(error.message());
}

StoreHealth Store::Health() const {
  absl::MutexLock lock(&health_mu_);
  return health_;
}

absl::Status Store::LimitPagesForTesting(int64_t pages) {
  absl::MutexLock lock(&mu_);
  return Exec(absl::StrCat("PRAGMA max_page_count = ", pages));
}

absl::Status Store::ReadSnapshot(
    const std::function<absl::Status(sqlite3*)>& body) {
  server_internal::SqliteReadPool::Lease lease = readers_->Acquire();
  sqlite3* db = lease.db();
  if (sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error(db, "starting a read");
  }
  absl::Status status = body(db);
  // Ending a read transaction cannot lose anything; a failed COMMIT only
  // leaves it to be rolled back.
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  return status;
}

absl::Status Store::Exec(const std::string& sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    const int code = sqlite3_extended_errcode(db_);
    const std::string error = absl::StrCat("database ", path_, ": ", text);
    if (!IsTransient(code)) return absl::FailedPreconditionError(error);
    absl::Status unavailable =
        WithCause(absl::UnavailableError(error), v1::ErrorCause::CAUSE_STORE);
    NoteWrite(code, unavailable);
    return unavailable;
  }
  return absl::OkStatus();
}

absl::Status Store::Migrate() {
  Statement get(db_, "PRAGMA user_version");
  if (!get.prepared() || get.Step() != SQLITE_ROW) {
    return Error("reading the schema version");
  }
  int version = static_cast<int>(get.Int(0));
  if (version > SchemaVersion()) {
    return absl::FailedPreconditionError(
        absl::StrCat("database ", path_, ": schema version ", version,
                     " was written by a newer hpcai500d (this one knows up to ",
                     SchemaVersion(), ")"));
  }
  for (; version < SchemaVersion(); ++version) {
    absl::Status status = InTransaction([&]() -> absl::Status {
      RETURN_IF_ERROR(Exec(kStoreMigrations[version]));
      if (version + 1 == kSpecColumnsVersion) {
        RETURN_IF_ERROR(FillRunSpecColumns());
      }
      // The table migration 7 makes is filled once it has every column
      // the rows are written with (migration 8's level).
      if (version + 1 == kLeaderboardLevelVersion) {
        RETURN_IF_ERROR(FillLeaderboard());
      }
      return Exec(absl::StrCat("PRAGMA user_version = ", version + 1));
    });
    if (!status.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "migrating to schema version ", version + 1, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Store::RefillLeaderboardOnNewRules() {
  const std::string rules = LeaderboardRulesDigest();
  Statement get(db_, "SELECT value FROM store_facts WHERE key = ?");
  const int rc = get.BindAll(std::string(kLeaderboardRulesKey)).Step();
  if (rc == SQLITE_ROW && get.Text(0) == rules) return absl::OkStatus();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return Error("reading the leaderboard's rules");
  }
  if (rc == SQLITE_ROW) {  // a file of no rules yet is new or migrating
    LogInfo(absl::StrCat("database ", path_,
                         ": the leaderboard's rules changed (the registry's "
                         "references or the row format); writing every row "
                         "again"));
  }
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(FillLeaderboard());
    return Write(
        "INSERT OR REPLACE INTO store_facts (key, value) VALUES (?, ?)",
        "storing the leaderboard's rules", std::string(kLeaderboardRulesKey),
        rules);
  });
}

absl::Status Store::FillRunSpecColumns() {
  std::vector<std::pair<int64_t, v1::RunSpec>> specs;
  {
    Statement read(db_, "SELECT id, spec FROM runs");
    int rc;
    while ((rc = read.Step()) == SQLITE_ROW) {
      v1::RunSpec spec;
      if (!spec.ParseFromString(read.Text(1))) {
        return absl::DataLossError(absl::StrCat("database ", path_, ": run ",
                                                read.Int(0),
                                                " has an unreadable spec"));
      }
      specs.emplace_back(read.Int(0), std::move(spec));
    }
    if (rc != SQLITE_DONE) return Error("reading run specs");
  }
  for (const auto& [id, spec] : specs) {
    RETURN_IF_ERROR(
        Write("UPDATE runs SET name = ?, workload = ?, config = ? WHERE id = ?",
              "filling a run's spec columns", spec.name(), spec.workload(),
              spec.config(), id));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Store::UserVersion() {
  absl::MutexLock lock(&mu_);
  Statement get(db_, "PRAGMA user_version");
  if (!get.prepared() || get.Step() != SQLITE_ROW) {
    return Error("reading the schema version");
  }
  return static_cast<int>(get.Int(0));
}

}  // namespace hpcai500
