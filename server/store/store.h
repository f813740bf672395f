// The coordinator's durable state in one SQLite file (WAL mode): submissions
// -> runs (repetitions) -> attempts -> events, the results (every input of
// Valid FLOPS) and the nodes seen. The schema is versioned with
// PRAGMA user_version and ordered migrations, so a newer hpcai500d opens an
// older file and an older one refuses a newer file.
//
// One owner: Open takes an exclusive lock on "<path>.lock" (which names the
// owner's pid) for the Store's life, so a second hpcai500d on the same file
// fails to open it. Durable: every commit is synchronous=FULL, so what a call
// reports stored survives a power loss once it returns.
//
// A write that fails because the file cannot be written now (a full disk,
// an I/O error, a lock held elsewhere: SQLite's FULL, IOERR, BUSY, LOCKED,
// NOMEM, CANTOPEN, READONLY) answers Unavailable, so callers retry it and
// clients see a retryable error rather than a refusal; Health() says the
// store is failing from that write until a write commits again.
//
// Thread-safe: writes (and the few reads the coordinator needs in step with
// them) go through one connection, serialised by mu_. The reads clients
// make (GetRun, ListRuns, Leaderboard, LoadEvents, ReadExits) go through a
// small pool of read-only connections instead: in WAL mode each sees the
// last commit, in one snapshot per call, and never waits for mu_ or for the
// writer.
#ifndef HPCAI500_SERVER_STORE_STORE_H_
#define HPCAI500_SERVER_STORE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/hpcai500.pb.h"

struct sqlite3;

namespace hpcai500 {
namespace server_internal {
class SqliteReadPool;
struct SqlQuery;
}  // namespace server_internal

// What InsertEvents did with an event.
enum class EventDisposition {
  kStored,     // new; stored now
  kDuplicate,  // (run, attempt, rank, seq) was stored before; unchanged
  kStale,      // not the run's current attempt (or no such run); ignored
};

// One event to store: its key (run, attempt, rank, seq), the line, and the
// error that made the coordinator refuse the line ("" for a good one; then
// `line` is empty).
struct EventRow {
  int64_t run_id = 0;
  int32_t attempt = 0;
  int32_t rank = 0;
  int64_t seq = 0;
  std::string line;
  std::string error;
  // Stored even though `attempt` is no longer the run's current one: what a
  // leaving node's stopped workers wrote (Coordinator::CheckEventLocked).
  bool past_attempt = false;
};

// One stored event line. `error` is set (and `line` empty) for a line the
// coordinator refused (too long, unparseable): it is recorded so that the
// sequence stays contiguous and can be acknowledged.
struct StoredEvent {
  int32_t rank = 0;
  int64_t seq = 0;
  std::string line;
  std::string error;
};

// The token key of the database at `db_path`: the file beside it that
// server/auth/auth.h keys token hashes with, and a backup copies along.
std::string TokenKeyPath(const std::string& db_path);

// One API token as stored: never the token itself, only its keyed hash
// (server/auth/auth.h says how tokens are made and checked).
struct TokenRecord {
  std::string id;    // the public part of the token, unique
  std::string user;  // whom it names
  std::string role;  // viewer | operator | admin | agent
  std::string node;  // agent tokens: the one node it may register as
  std::string hash;  // HMAC-SHA256 of the secret part (32 bytes)
  int64_t created_ms = 0;
  int64_t revoked_ms = 0;  // 0: in force
};

// Whether the store's writes are failing now, and since when.
struct StoreHealth {
  bool failing = false;
  int64_t failing_since_ms = 0;  // wall clock, Unix ms; 0 when not failing
  std::string last_error;        // of the first failed write of this spell
  int64_t write_errors = 0;      // every Unavailable error since Open
};
// The answer to a submit that stored `each` (one per spec of a suite named
// `suite`, "" for one spec): the first submission id, every submission id
// and every run id, in order.
v1::SubmitResponse CombinedSubmitResponse(
    const std::vector<v1::SubmitResponse>& each, const std::string& suite);

class Store {
 public:
  // Who opens the file: the one coordinator (Open takes the owner lock and
  // migrates), or a tool beside a running coordinator (no lock; the schema
  // must already be this binary's).
  enum class Access { kOwner, kBeside };

  // The schema version this binary writes (the number of migrations).
  static int SchemaVersion();

  // Opens (creating if absent) the database at `path` and migrates it to
  // SchemaVersion(). Errors name the file: FailedPrecondition when another
  // process holds "<path>.lock" (the message names the lock file and the
  // holder's pid), unreadable, not a database, written by a newer hpcai500d.
  // A refused open removes the lock file it made (never one that existed:
  // a second coordinator on a symlink to a live database leaves nothing).
  static absl::StatusOr<std::unique_ptr<Store>> Open(
      const std::string& path, Access access = Access::kOwner);

  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Whether writes are failing now (see the top). Never waits for a write.
  StoreHealth Health() const;

  // Tests: caps the file at `pages` pages (SQLite's max_page_count), so a
  // write that would grow it fails as on a full disk; a large cap lifts it.
  absl::Status LimitPagesForTesting(int64_t pages);

  // PRAGMA user_version of the open file.
  absl::StatusOr<int> UserVersion();

  // One submission to store: its spec's text and one run spec per
  // repetition (seeds already set), waiting in `queue` at `priority`.
  struct NewSubmission {
    std::string spec_yaml;
    std::vector<v1::RunSpec> run_specs;
    std::string queue;
    int32_t priority = 0;
  };
  // A client's id for one submit (SubmitRequest.request_id), stored with
  // what the submit created so that the same request sent again is answered
  // with it rather than stored twice (Coordinator::Submit).
  struct SubmitRequestId {
    std::string id;
    std::string spec_digest;  // of the request's whole spec text
    std::string suite;        // the suite's name; "" for one spec
  };
  // A request id as FindSubmitRequest finds it.
  struct StoredSubmitRequest {
    std::string spec_digest;
    int64_t created_ms = 0;
    v1::SubmitResponse response;  // what the first submit answered
  };
  // How long a request id is remembered: a retry comes within seconds, a
  // CI job's within its own run; a day bounds the table.
  static constexpr int64_t kSubmitRequestRetentionMs = 24 * 3600 * 1000;

  // Stores `submissions` of `user` (a suite: one per spec) and their runs
  // in ONE transaction: on an error none of them is stored. Runs start
  // QUEUED with repetition 1..R. Returns, per submission in order, its id
  // and its run ids in order. With `request`, the same transaction first
  // forgets every request id older than kSubmitRequestRetentionMs, then
  // stores `request` (of `user`, at `now_ms`) with the answer
  // CombinedSubmitResponse gives; AlreadyExists when `user` has that id.
  absl::StatusOr<std::vector<v1::SubmitResponse>> CreateSubmissions(
      const std::vector<NewSubmission>& submissions, int64_t now_ms,
      const std::string& user,
      const std::optional<SubmitRequestId>& request = std::nullopt);
  // Request `request_id` of `user` as stored within kSubmitRequestRetentionMs
  // before `now_ms`; nullopt when there is none (or it is older). Read on
  // the writer's connection, in step with CreateSubmissions.
  absl::StatusOr<std::optional<StoredSubmitRequest>> FindSubmitRequest(
      const std::string& user, const std::string& request_id, int64_t now_ms);
  // Records that `by` took the run's result off the leaderboard, with
  // `reason`, and takes its submission's row off the leaderboard table.
  // NotFound when there is no such run.
  absl::Status InvalidateRun(int64_t run_id, const std::string& by,
                             const std::string& reason, int64_t now_ms);
  // How many runs of `user` are queued.
  absl::StatusOr<int64_t> CountQueuedRuns(const std::string& user);
  // A user other than `user` who submitted a run of sweep `sweep`
  // (RunSpec.sweep), or nullopt when none did. Scans the runs whose spec
  // bytes hold `sweep`: for a submit that names a sweep, not a hot path.
  absl::StatusOr<std::optional<std::string>> OtherSweepOwner(
      const std::string& sweep, const std::string& user);

  // Writes the run's state, times, error, epochs, forecast and fingerprint
  // (one blob, in the epochs column: no migration), queue, priority and hold
  // (not its spec, attempts or score); a run that succeeded updates its
  // submission's leaderboard row. NotFound when there is no such run.
  absl::Status UpdateRun(const v1::Run& run);

  // Inserts or replaces attempt `attempt.number()` of `run_id` and makes it
  // the run's current attempt when its number is the highest so far.
  absl::Status SaveAttempt(int64_t run_id, const v1::Attempt& attempt);

  // The run with its attempts and (when scored) its score. NotFound.
  // Read on a read connection.
  absl::StatusOr<v1::Run> GetRun(int64_t run_id);
  // The runs matching every set field of `filter` (exact name, workload,
  // config, state, user, queue and submission_id; created at or after since_ms
  // and before until_ms; id < before_id), ordered by id descending, at most
  // filter.limit() of them (<= 0: all), with their attempts and scores. The
  // filtering is SQL's: runs that do not match are never read; attempts and
  // scores come in one query each for the whole list. Read on a read
  // connection. The caller validates the filter.
  absl::StatusOr<std::vector<v1::Run>> ListRuns(
      const v1::ListRunsRequest& filter);
  // Runs in any of `states`, ordered by id ascending (queue order).
  absl::StatusOr<std::vector<v1::Run>> ListRunsInStates(
      const std::vector<v1::RunState>& states);
  // Number of runs per state (states with no run are absent).
  absl::StatusOr<std::vector<std::pair<v1::RunState, int64_t>>>
  CountRunsByState();

  // The run's current attempt number (0 before the first). NotFound.
  absl::StatusOr<int32_t> CurrentAttempt(int64_t run_id);

  // Stores a batch of events (e.g. a whole Events message, of any runs and
  // attempts) in ONE transaction, so one sync makes all of it durable. Each
  // row (run, attempt, rank, seq) is stored at most once (a key stored
  // before or repeated within the batch is kDuplicate); a row of an attempt
  // that is not the run's current one is not stored (kStale) unless it is
  // `past_attempt`. Returns one disposition per row, in order. On an error
  // nothing of the batch is stored: acknowledge none of it.
  absl::StatusOr<std::vector<EventDisposition>> InsertEvents(
      const std::vector<EventRow>& rows);
  // The highest seq s such that every event 1..s of (run, attempt, rank) is
  // stored; 0 when none is.
  absl::StatusOr<int64_t> ContiguousSeq(int64_t run_id, int32_t attempt,
                                        int32_t rank);
  // That seq and the highest stored one (both 0 when none is): they differ
  // when a gap waits for events stored later.
  struct SeqRange {
    int64_t contiguous = 0;
    int64_t highest = 0;
  };
  absl::StatusOr<SeqRange> StoredSeqs(int64_t run_id, int32_t attempt,
                                      int32_t rank);
  // The stored events of one attempt, ordered by rank then seq: all of
  // them, or only rank `rank`'s. Read on a read connection, so a reader
  // (the pages poll some of these) never holds up the events being stored.
  absl::StatusOr<std::vector<StoredEvent>> LoadEvents(
      int64_t run_id, int32_t attempt,
      std::optional<int32_t> rank = std::nullopt);
  // Total events stored (all runs).
  absl::StatusOr<int64_t> CountEvents();

  // Stores (or replaces) the exit of rank exit.rank() of attempt exit.key().
  absl::Status SaveExit(const v1::WorkerExited& exit);
  // The stored exits of one attempt, by rank: LoadExits on the writer's
  // connection (in step with the coordinator's writes), ReadExits on a read
  // connection (what clients read: the run page's stderr).
  absl::StatusOr<std::vector<v1::WorkerExited>> LoadExits(int64_t run_id,
                                                          int32_t attempt);
  absl::StatusOr<std::vector<v1::WorkerExited>> ReadExits(int64_t run_id,
                                                          int32_t attempt);

  // Stores (or replaces) the score of a run (and updates its submission's
  // leaderboard row when the run already succeeded).
  absl::Status SaveResult(int64_t run_id, const v1::Score& score);

  // The leaderboard as server/store/leaderboard.h defines it (the board
  // built from every stored run at once), read from the leaderboard
  // table on a read connection: the page of the request's filters from
  // request.offset(), request.limit() rows (0: all), ranked within each
  // (workload, config), with the total before paging. The caller validates
  // the request.
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request);

  // Tokens. SaveToken inserts a new one (AlreadyExists for a used id);
  // FindToken is nullopt for an unknown id; RevokeToken is NotFound for an
  // unknown id and keeps the first revocation time.
  absl::Status SaveToken(const TokenRecord& token);
  absl::StatusOr<std::optional<TokenRecord>> FindToken(const std::string& id);
  absl::StatusOr<std::vector<TokenRecord>> ListTokens();
  absl::Status RevokeToken(const std::string& id, int64_t now_ms);
  // Tokens in force (not revoked).
  absl::StatusOr<int64_t> CountActiveTokens();

  // The audit trail: appends one row (its id and time are the entry's when
  // set, else assigned); lists the newest first, at most `limit` (<= 0:
  // 100), below `before_id` when > 0.
  absl::Status AppendAudit(const v1::AuditEntry& entry);
  absl::StatusOr<std::vector<v1::AuditEntry>> ListAudit(int limit,
                                                        int64_t before_id);

  // Promoted regress baselines, one per series: SaveBaseline inserts or
  // replaces the series' row; FindBaseline is nullopt for a series without
  // one.
  absl::Status SaveBaseline(const v1::Baseline& baseline);
  absl::StatusOr<std::optional<v1::Baseline>> FindBaseline(
      const std::string& series);

  // The maintenance window (server/coordinator/maintenance.h):
  // SaveMaintenance replaces it, or with until_ms 0 removes it;
  // LoadMaintenance gives until_ms 0 when none is stored.
  absl::Status SaveMaintenance(const v1::MaintenanceWindow& window);
  absl::StatusOr<v1::MaintenanceWindow> LoadMaintenance();

  // Inserts or updates a node by name (connected and used_slots are not
  // stored: they are live state).
  absl::Status SaveNode(const v1::Node& node);
  absl::StatusOr<std::vector<v1::Node>> ListNodes();
  // Deletes node `name`'s row; OK when there is none.
  absl::Status DeleteNode(const std::string& name);

  // Node health (store_node_health.cc). AddIncident stores one (its id and
  // time assigned when 0) and returns its id; ListIncidents gives the
  // newest first of node `node` (or, with run_id > 0, of that run), at most
  // `limit`; CountIncidents counts each node's.
  absl::StatusOr<int64_t> AddIncident(const v1::NodeIncident& incident);
  absl::StatusOr<std::vector<v1::NodeIncident>> ListIncidents(
      const std::string& node, int64_t run_id, int limit);
  absl::StatusOr<std::map<std::string, int>> CountIncidents();
  // Stores one pre-flight; PreflightHistory gives node `node`'s newest
  // first, at most `limit`; LatestPreflights the newest of every node.
  absl::Status SavePreflight(const v1::PreflightResult& result);
  absl::StatusOr<std::vector<v1::PreflightResult>> PreflightHistory(
      const std::string& node, int limit);
  absl::StatusOr<std::vector<v1::PreflightResult>> LatestPreflights();
  // The nodes flagged now: SaveFlag sets (or replaces) one, ClearFlag
  // removes it (OK when none), ListFlags gives node -> (flagged_ms,
  // evidence).
  absl::Status SaveFlag(const std::string& node, int64_t flagged_ms,
                        const std::string& evidence);
  absl::Status ClearFlag(const std::string& node);
  absl::StatusOr<std::map<std::string, std::pair<int64_t, std::string>>>
  ListFlags();

 private:
  Store(std::string path, sqlite3* db, int lock_fd, int file_lock_fd);

  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CreateSubmissions' `request` with its answer `response`, inside its
  // transaction, after forgetting the request ids expired at `now_ms`.
  absl::Status SaveSubmitRequestLocked(const SubmitRequestId& request,
                                       const std::string& user, int64_t now_ms,
                                       const v1::SubmitResponse& response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One submission of CreateSubmissions, inside its transaction.
  absl::StatusOr<v1::SubmitResponse> InsertSubmissionLocked(
      const NewSubmission& submission, int64_t now_ms, const std::string& user)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Exec(const std::string& sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const std::string& what) const;
  // Runs `body` (returning absl::Status or absl::StatusOr<T>) between BEGIN
  // IMMEDIATE and COMMIT; rolls back when it or the commit fails.
  template <typename Body>
  auto InTransaction(const Body& body) -> decltype(body())
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Prepares `sql`, binds `args` to its parameters in order and runs it to
  // completion (a statement that returns no rows); an error names `what`.
  template <typename... Args>
  absl::Status Write(const char* sql, const std::string& what,
                     const Args&... args) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The one number `sql` (a SELECT COUNT(*) ...) answers with `args` bound
  // to its parameters in order; an error names `what` it counts.
  template <typename... Args>
  absl::StatusOr<int64_t> Count(const char* sql, const std::string& what,
                                const Args&... args)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An error naming `what` and the last error of `db` (the writer's or a
  // read connection the caller holds).
  absl::Status Error(sqlite3* db, const std::string& what) const;
  // Runs `body(db)` on a leased read connection inside one read
  // transaction, so every query of the body sees the same commit; returns
  // what it returns.
  absl::Status ReadSnapshot(const std::function<absl::Status(sqlite3*)>& body);
  // The runs `query` selects (kRunColumns first) on `db` (held by the
  // caller: db_ under mu_, or a lease), with their scores and, when
  // `with_attempts`, their attempts: one query each for all of them.
  absl::StatusOr<std::vector<v1::Run>> QueryRuns(
      sqlite3* db, const server_internal::SqlQuery& query, bool with_attempts);
  absl::Status LoadAttempts(sqlite3* db, std::vector<v1::Run>& runs);
  // The exits of one attempt on `db` (held by the caller).
  absl::StatusOr<std::vector<v1::WorkerExited>> QueryExits(sqlite3* db,
                                                           int64_t run_id,
                                                           int32_t attempt);
  absl::Status LoadScores(sqlite3* db, std::vector<v1::Run>& runs);
  // Recomputes the leaderboard row of `submission_id` from its stored runs:
  // written when the submission is listed, deleted otherwise.
  absl::Status RefreshLeaderboardLocked(int64_t submission_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for the submission of run `run_id`.
  absl::Status RefreshLeaderboardOfRunLocked(int64_t run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Migration kLeaderboardLevelVersion: a row for each listed submission.
  absl::Status FillLeaderboard() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At open: FillLeaderboard when the file's rows were computed by other
  // rules than this binary's (LeaderboardRulesDigest), then records these.
  absl::Status RefillLeaderboardOnNewRules() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Migration kSpecColumnsVersion: copies name, workload and config from
  // each stored run's spec into the run's columns.
  absl::Status FillRunSpecColumns() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Notes a write that failed with SQLite's `code` (Unavailable for the
  // codes that pass: see the top) or committed (`code` SQLITE_OK).
  void NoteWrite(int code, const absl::Status& error) const;

  // Constant after construction.
  const std::string path_;
  const int lock_fd_;  // flock'ed "<path>.lock"; closing it unlocks
  // The database file itself, locked whatever path names it (a symlink, a
  // hard link); closed after SQLite closed the file.
  const int file_lock_fd_;
  // Set by Open once the file is migrated; constant after.
  std::unique_ptr<server_internal::SqliteReadPool> readers_;

  absl::Mutex mu_;
  sqlite3* const db_ ABSL_GUARDED_BY(mu_);

  // Apart from mu_: read by probes and metrics while a write holds mu_.
  mutable absl::Mutex health_mu_;
  mutable StoreHealth health_ ABSL_GUARDED_BY(health_mu_);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_STORE_STORE_H_
