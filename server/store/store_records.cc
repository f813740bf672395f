// The Store's records beside the runs: event lines, worker exits, nodes,
// API tokens, the audit trail and the maintenance window.
#include <sqlite3.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/internal/store_queries.h"
#include "server/store/internal/store_schema.h"
#include "server/store/internal/store_writes.h"
#include "server/store/store.h"

namespace hpcai500 {
namespace {

using server_internal::Blob;
using Statement = server_internal::SqliteStatement;

}  // namespace

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
  ASSIGN_OR_RETURN(const SeqRange range, StoredSeqs(run_id, attempt, rank));
  return range.contiguous;
}

absl::StatusOr<Store::SeqRange> Store::StoredSeqs(int64_t run_id,
                                                  int32_t attempt,
                                                  int32_t rank) {
  absl::MutexLock lock(&mu_);
  Statement count(db_,
                  "SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM events WHERE "
                  "run_id = ? AND attempt = ? AND rank = ? AND seq >= 1");
  if (count.BindAll(run_id, attempt, rank).Step() != SQLITE_ROW)
    return Error("counting events");
  SeqRange range{0, count.Int(1)};
  if (count.Int(0) == range.highest) {  // no gap
    range.contiguous = range.highest;
    return range;
  }
  Statement seqs(db_,
                 "SELECT seq FROM events WHERE run_id = ? AND attempt = ? AND "
                 "rank = ? AND seq >= 1 ORDER BY seq");
  seqs.BindAll(run_id, attempt, rank);
  while (seqs.Step() == SQLITE_ROW && seqs.Int(0) == range.contiguous + 1) {
    ++range.contiguous;
  }
  return range;
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
  return Count("SELECT COUNT(*) FROM events", "counting events");
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
  return Count("SELECT COUNT(*) FROM tokens WHERE revoked_ms = 0",
               "counting tokens");
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

absl::Status Store::SaveMaintenance(const v1::MaintenanceWindow& window) {
  absl::MutexLock lock(&mu_);
  if (window.until_ms() == 0) {
    return Write("DELETE FROM maintenance", "ending the maintenance window");
  }
  return Write(
      "INSERT OR REPLACE INTO maintenance (id, until_ms, started_ms, reason, "
      "started_by) VALUES (1, ?, ?, ?, ?)",
      "storing the maintenance window", window.until_ms(), window.started_ms(),
      window.reason(), window.started_by());
}

absl::StatusOr<v1::MaintenanceWindow> Store::LoadMaintenance() {
  absl::MutexLock lock(&mu_);
  Statement find(db_,
                 "SELECT until_ms, started_ms, reason, started_by FROM "
                 "maintenance WHERE id = 1");
  v1::MaintenanceWindow window;
  const int rc = find.Step();
  if (rc == SQLITE_DONE) return window;
  if (rc != SQLITE_ROW) return Error("reading the maintenance window");
  window.set_until_ms(find.Int(0));
  window.set_started_ms(find.Int(1));
  window.set_reason(find.Text(2));
  window.set_started_by(find.Text(3));
  return window;
}

}  // namespace hpcai500
