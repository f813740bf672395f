#include "server/store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/store/internal/sqlite_read_pool.h"
#include "server/store/internal/sqlite_statement.h"
#include "server/store/internal/store_queries.h"
#include "server/store/internal/store_schema.h"
#include "server/store/leaderboard.h"

namespace hpcai500 {
namespace {

using server_internal::Blob;
using server_internal::kLeaderboardLevelVersion;
using server_internal::kRunColumns;
using server_internal::kSpecColumnsVersion;
using server_internal::SqlQuery;

// An attempt with only its inventory: what the attempts table's inventory
// column holds.
v1::Attempt InventoryOnly(const v1::Attempt& attempt) {
  v1::Attempt only;
  *only.mutable_inventory() = attempt.inventory();
  return only;
}
using server_internal::kStoreMigrations;
using Statement = server_internal::SqliteStatement;

constexpr int kBusyTimeoutMs = 5000;
// Read connections: concurrent client reads (run lists, leaderboard pages,
// run pages) beyond this many wait for one another, never for the writer.
constexpr int kReadConnections = 4;

// Binds `params` to ?1, ?2, ... of `statement` in order.
void BindTexts(Statement& statement, const std::vector<std::string>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    statement.Bind(static_cast<int>(i + 1), params[i]);
  }
}

// The ids of `runs`, in order.
std::vector<int64_t> RunIds(const std::vector<v1::Run>& runs) {
  std::vector<int64_t> ids;
  ids.reserve(runs.size());
  for (const v1::Run& run : runs) ids.push_back(run.id());
  return ids;
}

// Run id -> index in `runs`.
std::unordered_map<int64_t, size_t> IndexById(
    const std::vector<v1::Run>& runs) {
  std::unordered_map<int64_t, size_t> index;
  index.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) index[runs[i].id()] = i;
  return index;
}

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
// process owns the database.
absl::StatusOr<int> LockDatabase(const std::string& db_path) {
  const std::string lock_path = db_path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
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
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("database ", db_path, ": cannot write lock file ",
                     lock_path, ": ", std::strerror(error)));
  }
  return fd;
}

}  // namespace

std::string TokenKeyPath(const std::string& db_path) {
  return db_path + ".token-key";
}

template <typename... Args>
absl::Status Store::Write(const char* sql, const std::string& what,
                          const Args&... args) {
  Statement write(db_, sql);
  if (!write.prepared() || write.BindAll(args...).Step() != SQLITE_DONE) {
    return Error(what);
  }
  return absl::OkStatus();
}

template <typename Body>
auto Store::InTransaction(const Body& body) -> decltype(body()) {
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto result = body();
  if (result.ok()) {
    absl::Status committed = Exec("COMMIT");
    if (committed.ok()) return result;
    result = std::move(committed);
  }
  Exec("ROLLBACK").IgnoreError();
  return result;
}

int Store::SchemaVersion() {
  return static_cast<int>(sizeof(kStoreMigrations) /
                          sizeof(kStoreMigrations[0]));
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path,
                                                   Access access) {
  int lock_fd = -1;
  if (access == Access::kOwner) {
    ASSIGN_OR_RETURN(lock_fd, LockDatabase(path));
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
    if (lock_fd >= 0) ::close(lock_fd);
    return absl::UnavailableError(
        absl::StrCat("database ", path, ": cannot open: ", message));
  }
  std::unique_ptr<Store> store(new Store(path, db, lock_fd));
  absl::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  // FULL: every commit syncs the WAL, so what a call stored (and the
  // coordinator then acknowledged) survives a power loss.
  RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  if (access == Access::kOwner) {
    RETURN_IF_ERROR(store->Migrate());
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

Store::Store(std::string path, sqlite3* db, int lock_fd)
    : path_(std::move(path)), lock_fd_(lock_fd), db_(db) {}

Store::~Store() {
  readers_.reset();  // first, so the writer's close checkpoints the WAL
  {
    absl::MutexLock lock(&mu_);
    sqlite3_close(db_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases it to the next owner
}

absl::Status Store::Error(const std::string& what) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return Error(db_, what);
}

absl::Status Store::Error(sqlite3* db, const std::string& what) const {
  return absl::InternalError(
      absl::StrCat("database ", path_, ": ", what, ": ", sqlite3_errmsg(db)));
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
    return absl::FailedPreconditionError(
        absl::StrCat("database ", path_, ": ", text));
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

absl::StatusOr<std::vector<v1::SubmitResponse>> Store::CreateSubmissions(
    const std::vector<NewSubmission>& submissions, int64_t now_ms,
    const std::string& user) {
  absl::MutexLock lock(&mu_);
  return InTransaction(
      [&]() -> absl::StatusOr<std::vector<v1::SubmitResponse>> {
        std::vector<v1::SubmitResponse> responses;
        for (const NewSubmission& submission : submissions) {
          ASSIGN_OR_RETURN(v1::SubmitResponse response,
                           InsertSubmissionLocked(submission, now_ms, user));
          responses.push_back(std::move(response));
        }
        return responses;
      });
}

absl::StatusOr<v1::SubmitResponse> Store::InsertSubmissionLocked(
    const NewSubmission& submission, int64_t now_ms, const std::string& user) {
  v1::SubmitResponse response;
  RETURN_IF_ERROR(
      Write("INSERT INTO submissions (spec_yaml, created_ms) VALUES (?, ?)",
            "storing a submission", submission.spec_yaml, now_ms));
  response.set_submission_id(sqlite3_last_insert_rowid(db_));
  int repetition = 0;
  for (const v1::RunSpec& spec : submission.run_specs) {
    RETURN_IF_ERROR(
        Write("INSERT INTO runs (submission_id, repetition, spec, state, "
              "created_ms, name, workload, config, user, queue, priority) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
              "storing a run", response.submission_id(), ++repetition,
              Blob{spec.SerializeAsString()},
              static_cast<int32_t>(v1::RUN_STATE_QUEUED), now_ms, spec.name(),
              spec.workload(), spec.config(), user, submission.queue,
              submission.priority));
    response.add_run_ids(sqlite3_last_insert_rowid(db_));
  }
  return response;
}

absl::StatusOr<v1::SubmitResponse> Store::CreateSubmission(
    const std::string& spec_yaml, const std::vector<v1::RunSpec>& run_specs,
    int64_t now_ms, const std::string& user, const std::string& queue,
    int32_t priority) {
  ASSIGN_OR_RETURN(
      std::vector<v1::SubmitResponse> stored,
      CreateSubmissions({NewSubmission{spec_yaml, run_specs, queue, priority}},
                        now_ms, user));
  return std::move(stored.front());
}

absl::Status Store::UpdateRun(const v1::Run& run) {
  absl::MutexLock lock(&mu_);
  v1::Run epochs_only;
  *epochs_only.mutable_epochs() = run.epochs();
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(Write(
        "UPDATE runs SET state = ?, started_ms = ?, "
        "finished_ms = ?, error = ?, epochs = ?, queue = ?, priority = ?, "
        "held_by = ? WHERE id = ?",
        "updating a run", static_cast<int32_t>(run.state()), run.started_ms(),
        run.finished_ms(), run.error(), Blob{epochs_only.SerializeAsString()},
        run.queue(), run.priority(), run.held_by(), run.id()));
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(absl::StrCat("no run ", run.id()));
    }
    if (run.state() == v1::RUN_STATE_SUCCEEDED) {
      return RefreshLeaderboardOfRunLocked(run.id());
    }
    // A submission with a run that did not succeed is not listed.
    return Write(
        "DELETE FROM leaderboard WHERE submission_id = (SELECT submission_id "
        "FROM runs WHERE id = ?)",
        "updating the leaderboard", run.id());
  });
}

absl::Status Store::SaveAttempt(int64_t run_id, const v1::Attempt& attempt) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(Write(
        "INSERT OR REPLACE INTO attempts (run_id, number, state, nodes, "
        "master_addr, master_port, started_ms, finished_ms, error, "
        "resume_from_attempt, resume_from_epoch, resumed_epoch, inventory) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "storing an attempt", run_id, attempt.number(), attempt.state(),
        absl::StrJoin(attempt.nodes(), ","), attempt.master_addr(),
        attempt.master_port(), attempt.started_ms(), attempt.finished_ms(),
        attempt.error(), attempt.resume_from_attempt(),
        attempt.resume_from_epoch(), attempt.resumed_epoch(),
        Blob{InventoryOnly(attempt).SerializeAsString()}));
    return Write(
        "UPDATE runs SET current_attempt = MAX(current_attempt, ?) WHERE id "
        "= ?",
        "updating a run", attempt.number(), run_id);
  });
}

absl::StatusOr<std::vector<v1::Run>> Store::QueryRuns(sqlite3* db,
                                                      const SqlQuery& sql,
                                                      bool with_attempts) {
  std::vector<v1::Run> runs;
  {
    Statement query(db, sql.sql.c_str());
    if (!query.prepared()) return Error(db, "reading runs");
    BindTexts(query, sql.text_params);
    int rc;
    while ((rc = query.Step()) == SQLITE_ROW) {
      v1::Run run;
      run.set_id(query.Int(0));
      run.set_submission_id(query.Int(1));
      run.set_repetition(static_cast<int32_t>(query.Int(2)));
      if (!run.mutable_spec()->ParseFromString(query.Text(3))) {
        return absl::DataLossError(absl::StrCat(
            "database ", path_, ": run ", run.id(), " has an unreadable spec"));
      }
      run.set_state(static_cast<v1::RunState>(query.Int(4)));
      run.set_created_ms(query.Int(5));
      run.set_started_ms(query.Int(6));
      run.set_finished_ms(query.Int(7));
      run.set_error(query.Text(8));
      v1::Run epochs_only;
      if (epochs_only.ParseFromString(query.Text(9))) {
        *run.mutable_epochs() = std::move(*epochs_only.mutable_epochs());
      }
      run.set_user(query.Text(10));
      run.set_invalidated_by(query.Text(11));
      run.set_invalidation_reason(query.Text(12));
      run.set_invalidated_ms(query.Int(13));
      run.set_queue(query.Text(14));
      run.set_priority(static_cast<int32_t>(query.Int(15)));
      run.set_held_by(query.Text(16));
      runs.push_back(std::move(run));
    }
    if (rc != SQLITE_DONE) return Error(db, "reading runs");
  }
  if (runs.empty()) return runs;
  RETURN_IF_ERROR(LoadScores(db, runs));
  if (with_attempts) RETURN_IF_ERROR(LoadAttempts(db, runs));
  return runs;
}

absl::Status Store::LoadAttempts(sqlite3* db, std::vector<v1::Run>& runs) {
  const std::unordered_map<int64_t, size_t> index = IndexById(runs);
  Statement attempts(db,
                     server_internal::AttemptsOfRunsSql(RunIds(runs)).c_str());
  if (!attempts.prepared()) return Error(db, "reading attempts");
  int rc;
  while ((rc = attempts.Step()) == SQLITE_ROW) {
    auto run = index.find(attempts.Int(0));
    if (run == index.end()) continue;
    v1::Attempt* attempt = runs[run->second].add_attempts();
    attempt->set_number(static_cast<int32_t>(attempts.Int(1)));
    attempt->set_state(attempts.Text(2));
    for (absl::string_view node :
         absl::StrSplit(attempts.Text(3), ',', absl::SkipEmpty())) {
      attempt->add_nodes(std::string(node));
    }
    attempt->set_master_addr(attempts.Text(4));
    attempt->set_master_port(static_cast<int32_t>(attempts.Int(5)));
    attempt->set_started_ms(attempts.Int(6));
    attempt->set_finished_ms(attempts.Int(7));
    attempt->set_error(attempts.Text(8));
    attempt->set_resume_from_attempt(static_cast<int32_t>(attempts.Int(9)));
    attempt->set_resume_from_epoch(static_cast<int32_t>(attempts.Int(10)));
    attempt->set_resumed_epoch(static_cast<int32_t>(attempts.Int(11)));
    v1::Attempt inventory_only;
    if (inventory_only.ParseFromString(attempts.Text(12))) {
      *attempt->mutable_inventory() =
          std::move(*inventory_only.mutable_inventory());
    }
  }
  if (rc != SQLITE_DONE) return Error(db, "reading attempts");
  return absl::OkStatus();
}

absl::Status Store::LoadScores(sqlite3* db, std::vector<v1::Run>& runs) {
  const std::unordered_map<int64_t, size_t> index = IndexById(runs);
  Statement result(db, server_internal::ScoresOfRunsSql(RunIds(runs)).c_str());
  if (!result.prepared()) return Error(db, "reading results");
  int rc;
  while ((rc = result.Step()) == SQLITE_ROW) {
    auto run = index.find(result.Int(0));
    if (run == index.end()) continue;
    v1::Score* score = runs[run->second].mutable_score();
    score->set_quality(result.Double(1));
    score->set_target(result.Double(2));
    score->set_exponent(result.Double(3));
    score->set_forward_flops_per_sample(result.Double(4));
    score->set_samples(result.Int(5));
    score->set_train_seconds(result.Double(6));
    score->set_eval_seconds(result.Double(7));
    score->set_flops(result.Double(8));
    score->set_valid_flops(result.Double(9));
    score->set_reached_target(result.Int(10) != 0);
    score->set_convention(result.Text(11));
    score->set_energy_joules(result.Double(12));
    score->set_valid_flops_per_watt(result.Double(13));
    score->set_lost_seconds(result.Double(14));
  }
  if (rc != SQLITE_DONE) return Error(db, "reading results");
  return absl::OkStatus();
}

absl::StatusOr<v1::Run> Store::GetRun(int64_t run_id) {
  std::vector<v1::Run> runs;
  RETURN_IF_ERROR(ReadSnapshot([&](sqlite3* db) -> absl::Status {
    ASSIGN_OR_RETURN(
        runs,
        QueryRuns(db, {absl::StrCat(kRunColumns, "WHERE id = ", run_id), {}},
                  /*with_attempts=*/true));
    return absl::OkStatus();
  }));
  if (runs.empty()) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  return std::move(runs.front());
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns(
    const v1::ListRunsRequest& filter) {
  const SqlQuery query = server_internal::ListRunsQuery(filter);
  std::vector<v1::Run> runs;
  RETURN_IF_ERROR(ReadSnapshot([&](sqlite3* db) -> absl::Status {
    ASSIGN_OR_RETURN(runs, QueryRuns(db, query, /*with_attempts=*/true));
    return absl::OkStatus();
  }));
  return runs;
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRunsInStates(
    const std::vector<v1::RunState>& states) {
  absl::MutexLock lock(&mu_);
  if (states.empty()) return std::vector<v1::Run>();
  std::vector<int> numbers(states.begin(), states.end());
  return QueryRuns(
      db_,
      {absl::StrCat(kRunColumns, "WHERE state IN (",
                    absl::StrJoin(numbers, ","), ") ORDER BY id ASC"),
       {}},
      /*with_attempts=*/true);
}

absl::StatusOr<std::vector<std::pair<v1::RunState, int64_t>>>
Store::CountRunsByState() {
  absl::MutexLock lock(&mu_);
  Statement count(db_, "SELECT state, COUNT(*) FROM runs GROUP BY state");
  std::vector<std::pair<v1::RunState, int64_t>> counts;
  int rc;
  while ((rc = count.Step()) == SQLITE_ROW) {
    counts.emplace_back(static_cast<v1::RunState>(count.Int(0)), count.Int(1));
  }
  if (rc != SQLITE_DONE) return Error("counting runs");
  return counts;
}

absl::StatusOr<int32_t> Store::CurrentAttempt(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  Statement get(db_, "SELECT current_attempt FROM runs WHERE id = ?");
  int rc = get.BindAll(run_id).Step();
  if (rc == SQLITE_DONE) {
    return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  if (rc != SQLITE_ROW) return Error("reading a run");
  return static_cast<int32_t>(get.Int(0));
}

absl::StatusOr<EventDisposition> Store::InsertEvent(int64_t run_id,
                                                    int32_t attempt,
                                                    int32_t rank, int64_t seq,
                                                    const std::string& line,
                                                    const std::string& error) {
  ASSIGN_OR_RETURN(
      std::vector<EventDisposition> dispositions,
      InsertEvents({EventRow{run_id, attempt, rank, seq, line, error}}));
  return dispositions.front();
}

absl::StatusOr<std::vector<EventDisposition>> Store::InsertEvents(
    const std::vector<EventRow>& rows) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::StatusOr<std::vector<EventDisposition>> {
    // One statement checks "current attempt" and inserts, so a concurrent
    // SaveAttempt cannot slip between the check and the insert.
    Statement insert(db_,
                     "INSERT OR IGNORE INTO events (run_id, attempt, rank, "
                     "seq, line, error) SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE "
                     "?7 OR EXISTS (SELECT 1 FROM runs WHERE id = ?1 AND "
                     "current_attempt = ?2)");
    Statement current(
        db_, "SELECT 1 FROM runs WHERE id = ? AND current_attempt = ?");
    if (!insert.prepared() || !current.prepared()) {
      return Error("storing events");
    }
    std::vector<EventDisposition> dispositions;
    dispositions.reserve(rows.size());
    for (const EventRow& row : rows) {
      insert.Reset();
      if (insert
              .BindAll(row.run_id, row.attempt, row.rank, row.seq, row.line,
                       row.error, row.past_attempt ? 1 : 0)
              .Step() != SQLITE_DONE) {
        return Error("storing an event");
      }
      if (sqlite3_changes(db_) == 1) {
        dispositions.push_back(EventDisposition::kStored);
        continue;
      }
      current.Reset();
      dispositions.push_back(
          row.past_attempt ||
                  current.BindAll(row.run_id, row.attempt).Step() == SQLITE_ROW
              ? EventDisposition::kDuplicate
              : EventDisposition::kStale);
    }
    return dispositions;
  });
}

absl::StatusOr<int64_t> Store::ContiguousSeq(int64_t run_id, int32_t attempt,
                                             int32_t rank) {
  absl::MutexLock lock(&mu_);
  Statement count(db_,
                  "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM events WHERE "
                  "run_id = ? AND attempt = ? AND rank = ? AND seq >= 1");
  if (count.BindAll(run_id, attempt, rank).Step() != SQLITE_ROW)
    return Error("counting events");
  if (count.Int(0) == count.Int(1)) return count.Int(1);  // no gap
  Statement seqs(db_,
                 "SELECT seq FROM events WHERE run_id = ? AND attempt = ? AND "
                 "rank = ? AND seq >= 1 ORDER BY seq");
  seqs.BindAll(run_id, attempt, rank);
  int64_t contiguous = 0;
  while (seqs.Step() == SQLITE_ROW && seqs.Int(0) == contiguous + 1) {
    ++contiguous;
  }
  return contiguous;
}

absl::StatusOr<std::vector<StoredEvent>> Store::LoadEvents(
    int64_t run_id, int32_t attempt, std::optional<int32_t> rank) {
  std::vector<StoredEvent> events;
  RETURN_IF_ERROR(ReadSnapshot([&](sqlite3* db) -> absl::Status {
    Statement load(db, rank.has_value()
                           ? "SELECT rank, seq, line, error FROM events WHERE "
                             "run_id = ? AND attempt = ? AND rank = ? ORDER "
                             "BY seq"
                           : "SELECT rank, seq, line, error FROM events WHERE "
                             "run_id = ? AND attempt = ? ORDER BY rank, seq");
    if (!load.prepared()) return Error(db, "reading events");
    if (rank.has_value()) {
      load.BindAll(run_id, attempt, *rank);
    } else {
      load.BindAll(run_id, attempt);
    }
    int rc;
    while ((rc = load.Step()) == SQLITE_ROW) {
      StoredEvent event;
      event.rank = static_cast<int32_t>(load.Int(0));
      event.seq = load.Int(1);
      event.line = load.Text(2);
      event.error = load.Text(3);
      events.push_back(std::move(event));
    }
    if (rc != SQLITE_DONE) return Error(db, "reading events");
    return absl::OkStatus();
  }));
  return events;
}

absl::StatusOr<int64_t> Store::CountEvents() {
  absl::MutexLock lock(&mu_);
  Statement count(db_, "SELECT COUNT(*) FROM events");
  if (count.Step() != SQLITE_ROW) return Error("counting events");
  return count.Int(0);
}

absl::Status Store::SaveResult(int64_t run_id, const v1::Score& score) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(Write(
        "INSERT OR REPLACE INTO results (run_id, quality, target, exponent, "
        "forward_flops_per_sample, samples, train_seconds, eval_seconds, "
        "flops, valid_flops, reached_target, convention, energy_joules, "
        "valid_flops_per_watt, lost_seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?, ?, ?)",
        "storing a result", run_id, score.quality(), score.target(),
        score.exponent(), score.forward_flops_per_sample(), score.samples(),
        score.train_seconds(), score.eval_seconds(), score.flops(),
        score.valid_flops(), score.reached_target(), score.convention(),
        score.energy_joules(), score.valid_flops_per_watt(),
        score.lost_seconds()));
    return RefreshLeaderboardOfRunLocked(run_id);
  });
}

absl::Status Store::RefreshLeaderboardOfRunLocked(int64_t run_id) {
  Statement get(db_, "SELECT submission_id FROM runs WHERE id = ?");
  const int rc = get.BindAll(run_id).Step();
  if (rc == SQLITE_DONE) return absl::OkStatus();  // no run: nothing listed
  if (rc != SQLITE_ROW) return Error("reading a run's submission");
  return RefreshLeaderboardLocked(get.Int(0));
}

absl::Status Store::RefreshLeaderboardLocked(int64_t submission_id) {
  ASSIGN_OR_RETURN(
      const std::vector<v1::Run> runs,
      QueryRuns(db_,
                {absl::StrCat(kRunColumns, "WHERE submission_id = ",
                              submission_id, " ORDER BY id"),
                 {}},
                /*with_attempts=*/true));
  std::vector<const v1::Run*> members;
  for (const v1::Run& run : runs) members.push_back(&run);
  const std::optional<v1::LeaderboardRow> row = SubmissionRow(members);
  if (!row.has_value()) {
    return Write("DELETE FROM leaderboard WHERE submission_id = ?",
                 "updating the leaderboard", submission_id);
  }
  return Write(
      "INSERT OR REPLACE INTO leaderboard (submission_id, workload, config, "
      "level, unranked, valid_flops, row) VALUES (?, ?, ?, ?, ?, ?, ?)",
      "updating the leaderboard", submission_id, row->workload(), row->config(),
      row->level(), !row->ranked(), row->valid_flops(),
      Blob{row->SerializeAsString()});
}

absl::Status Store::FillLeaderboard() {
  std::vector<int64_t> submissions;
  {
    Statement read(db_, absl::StrCat("SELECT DISTINCT submission_id FROM runs "
                                     "WHERE state = ",
                                     static_cast<int>(v1::RUN_STATE_SUCCEEDED))
                            .c_str());
    int rc;
    while ((rc = read.Step()) == SQLITE_ROW) submissions.push_back(read.Int(0));
    if (rc != SQLITE_DONE) return Error("reading submissions");
  }
  for (int64_t submission : submissions) {
    RETURN_IF_ERROR(RefreshLeaderboardLocked(submission));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::LeaderboardResponse> Store::Leaderboard(
    const v1::LeaderboardRequest& request) {
  if (!request.sort().empty()) {
    // Another order than the table's index: every row the filters keep
    // (the whole board without a workload or config filter) is read and
    // ranked, then sorted and paged here. Most sort keys live only in the
    // serialized row, so SQL cannot order by them (docs/design.md, "Pages").
    v1::LeaderboardRequest all = request;
    all.clear_sort();
    all.clear_limit();
    all.clear_offset();
    ASSIGN_OR_RETURN(v1::LeaderboardResponse response, Leaderboard(all));
    SortLeaderboardRows(*response.mutable_rows(), request.sort(),
                        request.ascending());
    PageLeaderboard(request, response);
    return response;
  }
  const SqlQuery count = server_internal::LeaderboardCountQuery(request);
  const SqlQuery page = server_internal::LeaderboardPageQuery(request);
  v1::LeaderboardResponse response;
  RETURN_IF_ERROR(ReadSnapshot([&](sqlite3* db) -> absl::Status {
    Statement total(db, count.sql.c_str());
    BindTexts(total, count.text_params);
    if (!total.prepared() || total.Step() != SQLITE_ROW) {
      return Error(db, "counting leaderboard rows");
    }
    response.set_total(static_cast<int32_t>(total.Int(0)));
    Statement rows(db, page.sql.c_str());
    Statement ahead(db, request.level().empty()
                            ? server_internal::kRankedRowsAheadSql
                            : server_internal::kRankedRowsOfLevelAheadSql);
    if (!rows.prepared() || !ahead.prepared()) {
      return Error(db, "reading the leaderboard");
    }
    BindTexts(rows, page.text_params);
    // A page may start inside a (workload, config) group: the first ranked
    // row of each group on the page counts the ranked rows ahead of it.
    std::string workload, config;
    int32_t next_rank = 0;  // 0: not known yet for this group
    int rc;
    while ((rc = rows.Step()) == SQLITE_ROW) {
      v1::LeaderboardRow* row = response.add_rows();
      if (!row->ParseFromString(rows.Text(5))) {
        return absl::DataLossError(absl::StrCat(
            "database ", path_, ": the leaderboard row of submission ",
            rows.Int(0), " is unreadable"));
      }
      if (rows.Text(1) != workload || rows.Text(2) != config) {
        workload = rows.Text(1);
        config = rows.Text(2);
        next_rank = 0;
      }
      if (rows.Int(3) != 0) {
        row->set_rank(0);
        continue;
      }
      if (next_rank == 0) {
        ahead.Reset();
        if (request.level().empty()
                ? ahead.BindAll(workload, config, rows.Double(4), rows.Int(0))
                          .Step() != SQLITE_ROW
                : ahead.BindAll(workload, config, rows.Double(4), rows.Int(0),
                                request.level())
                          .Step() != SQLITE_ROW) {
          return Error(db, "ranking the leaderboard");
        }
        next_rank = static_cast<int32_t>(ahead.Int(0)) + 1;
      }
      row->set_rank(next_rank++);
    }
    if (rc != SQLITE_DONE) return Error(db, "reading the leaderboard");
    return absl::OkStatus();
  }));
  return response;
}

absl::Status Store::SaveExit(const v1::WorkerExited& exit) {
  absl::MutexLock lock(&mu_);
  return Write(
      "INSERT OR REPLACE INTO exits (run_id, attempt, rank, exit_code, "
      "signal, error, stderr_tail) VALUES (?, ?, ?, ?, ?, ?, ?)",
      "storing a worker's exit", exit.key().run_id(), exit.key().attempt(),
      exit.rank(), exit.exit_code(), exit.signal(), exit.error(),
      exit.stderr_tail());
}

absl::StatusOr<std::vector<v1::WorkerExited>> Store::QueryExits(
    sqlite3* db, int64_t run_id, int32_t attempt) {
  Statement load(db,
                 "SELECT rank, exit_code, signal, error, stderr_tail FROM "
                 "exits WHERE run_id = ? AND attempt = ? ORDER BY rank");
  load.BindAll(run_id, attempt);
  std::vector<v1::WorkerExited> exits;
  int rc;
  while ((rc = load.Step()) == SQLITE_ROW) {
    v1::WorkerExited& exit = exits.emplace_back();
    exit.mutable_key()->set_run_id(run_id);
    exit.mutable_key()->set_attempt(attempt);
    exit.set_rank(static_cast<int32_t>(load.Int(0)));
    exit.set_exit_code(static_cast<int32_t>(load.Int(1)));
    exit.set_signal(static_cast<int32_t>(load.Int(2)));
    exit.set_error(load.Text(3));
    exit.set_stderr_tail(load.Text(4));
  }
  if (rc != SQLITE_DONE) return Error(db, "reading exits");
  return exits;
}

absl::StatusOr<std::vector<v1::WorkerExited>> Store::LoadExits(
    int64_t run_id, int32_t attempt) {
  absl::MutexLock lock(&mu_);
  return QueryExits(db_, run_id, attempt);
}

absl::StatusOr<std::vector<v1::WorkerExited>> Store::ReadExits(
    int64_t run_id, int32_t attempt) {
  std::vector<v1::WorkerExited> exits;
  RETURN_IF_ERROR(ReadSnapshot([&](sqlite3* db) -> absl::Status {
    ASSIGN_OR_RETURN(exits, QueryExits(db, run_id, attempt));
    return absl::OkStatus();
  }));
  return exits;
}

absl::Status Store::SaveNode(const v1::Node& node) {
  absl::MutexLock lock(&mu_);
  v1::Node labels_only;
  *labels_only.mutable_labels() = node.labels();
  return Write(
      "INSERT OR REPLACE INTO nodes (name, address, slots, cpus, gpus, "
      "labels, last_seen_ms, state, state_reason, inventory) VALUES (?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?)",
      "storing a node", node.name(), node.address(), node.slots(), node.cpus(),
      node.gpus(), Blob{labels_only.SerializeAsString()}, node.last_seen_ms(),
      node.state(), node.state_reason(),
      Blob{node.inventory().SerializeAsString()});
}

absl::Status Store::DeleteNode(const std::string& name) {
  absl::MutexLock lock(&mu_);
  return Write("DELETE FROM nodes WHERE name = ?", "forgetting a node", name);
}

absl::StatusOr<std::vector<v1::Node>> Store::ListNodes() {
  absl::MutexLock lock(&mu_);
  Statement list(db_,
                 "SELECT name, address, slots, cpus, gpus, labels, "
                 "last_seen_ms, state, state_reason, inventory FROM nodes "
                 "ORDER BY name");
  std::vector<v1::Node> nodes;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    v1::Node node;
    node.set_name(list.Text(0));
    node.set_address(list.Text(1));
    node.set_slots(static_cast<int32_t>(list.Int(2)));
    node.set_cpus(static_cast<int32_t>(list.Int(3)));
    node.set_gpus(static_cast<int32_t>(list.Int(4)));
    v1::Node labels_only;
    if (labels_only.ParseFromString(list.Text(5))) {
      *node.mutable_labels() = labels_only.labels();
    }
    node.set_last_seen_ms(list.Int(6));
    node.set_state(list.Text(7));
    node.set_state_reason(list.Text(8));
    if (!node.mutable_inventory()->ParseFromString(list.Text(9))) {
      node.clear_inventory();
    }
    nodes.push_back(std::move(node));
  }
  if (rc != SQLITE_DONE) return Error("reading nodes");
  return nodes;
}

absl::Status Store::InvalidateRun(int64_t run_id, const std::string& by,
                                  const std::string& reason, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(
        Write("UPDATE runs SET invalidated_by = ?, invalidation_reason = ?, "
              "invalidated_ms = ? WHERE id = ?",
              "invalidating a run", by, reason, now_ms, run_id));
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(absl::StrCat("no run ", run_id));
    }
    return RefreshLeaderboardOfRunLocked(run_id);
  });
}

absl::StatusOr<int64_t> Store::CountQueuedRuns(const std::string& user) {
  absl::MutexLock lock(&mu_);
  Statement count(db_,
                  "SELECT COUNT(*) FROM runs WHERE user = ? AND state = ?");
  count.BindAll(user, static_cast<int32_t>(v1::RUN_STATE_QUEUED));
  if (count.Step() != SQLITE_ROW) return Error("counting queued runs");
  return count.Int(0);
}

absl::Status Store::SaveToken(const TokenRecord& token) {
  absl::MutexLock lock(&mu_);
  {
    Statement find(db_, "SELECT 1 FROM tokens WHERE id = ?");
    find.BindAll(token.id);
    if (find.Step() == SQLITE_ROW) {
      return absl::AlreadyExistsError(
          absl::StrCat("token id ", token.id, " exists"));
    }
  }
  return Write(
      "INSERT INTO tokens (id, user, role, node, hash, created_ms, "
      "revoked_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
      "storing a token", token.id, token.user, token.role, token.node,
      Blob{token.hash}, token.created_ms, token.revoked_ms);
}

namespace {
constexpr char kTokenColumns[] =
    "SELECT id, user, role, node, hash, created_ms, revoked_ms FROM tokens ";

TokenRecord ReadToken(Statement& row) {
  TokenRecord token;
  token.id = row.Text(0);
  token.user = row.Text(1);
  token.role = row.Text(2);
  token.node = row.Text(3);
  token.hash = row.Text(4);
  token.created_ms = row.Int(5);
  token.revoked_ms = row.Int(6);
  return token;
}
}  // namespace

absl::StatusOr<std::optional<TokenRecord>> Store::FindToken(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  Statement find(db_, absl::StrCat(kTokenColumns, "WHERE id = ?").c_str());
  find.BindAll(id);
  const int rc = find.Step();
  if (rc == SQLITE_ROW) return ReadToken(find);
  if (rc != SQLITE_DONE) return Error("reading a token");
  return std::nullopt;
}

absl::StatusOr<std::vector<TokenRecord>> Store::ListTokens() {
  absl::MutexLock lock(&mu_);
  Statement list(
      db_, absl::StrCat(kTokenColumns, "ORDER BY created_ms, id").c_str());
  std::vector<TokenRecord> tokens;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) tokens.push_back(ReadToken(list));
  if (rc != SQLITE_DONE) return Error("reading tokens");
  return tokens;
}

absl::Status Store::SaveBaseline(const v1::Baseline& baseline) {
  absl::MutexLock lock(&mu_);
  return Write(
      "INSERT OR REPLACE INTO regress_baselines (series, run_id, promoted_by, "
      "promoted_ms) VALUES (?, ?, ?, ?)",
      "storing a regress baseline", baseline.series(), baseline.run_id(),
      baseline.promoted_by(), baseline.promoted_ms());
}

absl::StatusOr<std::optional<v1::Baseline>> Store::FindBaseline(
    const std::string& series) {
  absl::MutexLock lock(&mu_);
  Statement find(db_,
                 "SELECT run_id, promoted_by, promoted_ms FROM "
                 "regress_baselines WHERE series = ?");
  find.BindAll(series);
  const int rc = find.Step();
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return Error("reading a regress baseline");
  v1::Baseline baseline;
  baseline.set_series(series);
  baseline.set_run_id(find.Int(0));
  baseline.set_promoted_by(find.Text(1));
  baseline.set_promoted_ms(find.Int(2));
  return baseline;
}

absl::Status Store::RevokeToken(const std::string& id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Write(
      "UPDATE tokens SET revoked_ms = CASE WHEN revoked_ms = 0 THEN ? ELSE "
      "revoked_ms END WHERE id = ?",
      "revoking a token", now_ms, id));
  if (sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(absl::StrCat("no token with id ", id));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Store::CountActiveTokens() {
  absl::MutexLock lock(&mu_);
  Statement count(db_, "SELECT COUNT(*) FROM tokens WHERE revoked_ms = 0");
  if (count.Step() != SQLITE_ROW) return Error("counting tokens");
  return count.Int(0);
}

absl::Status Store::AppendAudit(const v1::AuditEntry& entry) {
  absl::MutexLock lock(&mu_);
  return Write(
      "INSERT INTO audit (time_ms, user, role, action, target, peer, allowed, "
      "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      "storing an audit row", entry.time_ms(), entry.user(), entry.role(),
      entry.action(), entry.target(), entry.peer(), entry.allowed(),
      entry.detail());
}

absl::StatusOr<std::vector<v1::AuditEntry>> Store::ListAudit(
    int limit, int64_t before_id) {
  absl::MutexLock lock(&mu_);
  Statement list(db_,
                 "SELECT id, time_ms, user, role, action, target, peer, "
                 "allowed, detail FROM audit WHERE (?1 <= 0 OR id < ?1) "
                 "ORDER BY id DESC LIMIT ?2");
  list.BindAll(before_id, static_cast<int64_t>(limit > 0 ? limit : 100));
  std::vector<v1::AuditEntry> entries;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    v1::AuditEntry& entry = entries.emplace_back();
    entry.set_id(list.Int(0));
    entry.set_time_ms(list.Int(1));
    entry.set_user(list.Text(2));
    entry.set_role(list.Text(3));
    entry.set_action(list.Text(4));
    entry.set_target(list.Text(5));
    entry.set_peer(list.Text(6));
    entry.set_allowed(list.Int(7) != 0);
    entry.set_detail(list.Text(8));
  }
  if (rc != SQLITE_DONE) return Error("reading the audit trail");
  return entries;
}

}  // namespace hpcai500
