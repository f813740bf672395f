// The Store's node health tables (store.h, migration 13): incidents,
// pre-flight results and the flags of nodes.
#include <sqlite3.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/store/internal/store_writes.h"
#include "server/store/store.h"

namespace hpcai500 {

using Statement = server_internal::SqliteStatement;
using server_internal::Blob;

absl::StatusOr<int64_t> Store::AddIncident(const v1::NodeIncident& incident) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(
      Write("INSERT INTO node_incidents (node, time_ms, kind, run_id, attempt, "
            "rank, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
            "storing a node incident", incident.node(), incident.time_ms(),
            incident.kind(), incident.run_id(), incident.attempt(),
            incident.rank(), incident.detail()));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

absl::StatusOr<std::vector<v1::NodeIncident>> Store::ListIncidents(
    const std::string& node, int64_t run_id, int limit) {
  absl::MutexLock lock(&mu_);
  Statement list(db_, run_id > 0
                          ? "SELECT id, node, time_ms, kind, run_id, attempt, "
                            "rank, detail FROM node_incidents WHERE run_id = ? "
                            "ORDER BY id DESC LIMIT ?"
                          : "SELECT id, node, time_ms, kind, run_id, attempt, "
                            "rank, detail FROM node_incidents WHERE node = ? "
                            "ORDER BY id DESC LIMIT ?");
  if (run_id > 0) {
    list.BindAll(run_id, limit);
  } else {
    list.BindAll(node, limit);
  }
  std::vector<v1::NodeIncident> out;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    v1::NodeIncident& i = out.emplace_back();
    i.set_id(list.Int(0));
    i.set_node(list.Text(1));
    i.set_time_ms(list.Int(2));
    i.set_kind(list.Text(3));
    i.set_run_id(list.Int(4));
    i.set_attempt(static_cast<int32_t>(list.Int(5)));
    i.set_rank(static_cast<int32_t>(list.Int(6)));
    i.set_detail(list.Text(7));
  }
  if (rc != SQLITE_DONE) return Error("reading node incidents");
  return out;
}

absl::StatusOr<std::map<std::string, int>> Store::CountIncidents() {
  absl::MutexLock lock(&mu_);
  Statement count(db_,
                  "SELECT node, COUNT(*) FROM node_incidents GROUP BY node");
  std::map<std::string, int> out;
  int rc;
  while ((rc = count.Step()) == SQLITE_ROW) {
    out[count.Text(0)] = static_cast<int>(count.Int(1));
  }
  if (rc != SQLITE_DONE) return Error("counting node incidents");
  return out;
}

absl::Status Store::SavePreflight(const v1::PreflightResult& result) {
  absl::MutexLock lock(&mu_);
  return Write(
      "INSERT INTO node_preflights (node, time_ms, result) VALUES (?, ?, ?)",
      "storing a pre-flight result", result.node(), result.time_ms(),
      Blob{result.SerializeAsString()});
}

namespace {

// The results `query` selects (one column: the serialized result); an
// unreadable row is DataLoss naming the database.
absl::StatusOr<std::vector<v1::PreflightResult>> ReadPreflights(
    Statement& query, const std::string& path) {
  std::vector<v1::PreflightResult> out;
  int rc;
  while ((rc = query.Step()) == SQLITE_ROW) {
    if (!out.emplace_back().ParseFromString(query.Text(0))) {
      return absl::DataLossError(
          absl::StrCat("database ", path, ": an unreadable pre-flight result"));
    }
  }
  if (rc != SQLITE_DONE) {
    return absl::InternalError(
        absl::StrCat("database ", path, ": reading pre-flight results"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::PreflightResult>> Store::PreflightHistory(
    const std::string& node, int limit) {
  absl::MutexLock lock(&mu_);
  Statement list(db_,
                 "SELECT result FROM node_preflights WHERE node = ? ORDER BY "
                 "id DESC LIMIT ?");
  list.BindAll(node, limit);
  return ReadPreflights(list, path_);
}

absl::StatusOr<std::vector<v1::PreflightResult>> Store::LatestPreflights() {
  absl::MutexLock lock(&mu_);
  Statement list(db_,
                 "SELECT result FROM node_preflights WHERE id IN (SELECT "
                 "MAX(id) FROM node_preflights GROUP BY node) ORDER BY node");
  return ReadPreflights(list, path_);
}

absl::Status Store::SaveFlag(const std::string& node, int64_t flagged_ms,
                             const std::string& evidence) {
  absl::MutexLock lock(&mu_);
  return Write(
      "INSERT OR REPLACE INTO node_flags (node, flagged_ms, evidence) VALUES "
      "(?, ?, ?)",
      "flagging a node", node, flagged_ms, evidence);
}

absl::Status Store::ClearFlag(const std::string& node) {
  absl::MutexLock lock(&mu_);
  return Write("DELETE FROM node_flags WHERE node = ?",
               "clearing a node's flag", node);
}

absl::StatusOr<std::map<std::string, std::pair<int64_t, std::string>>>
Store::ListFlags() {
  absl::MutexLock lock(&mu_);
  Statement list(db_, "SELECT node, flagged_ms, evidence FROM node_flags");
  std::map<std::string, std::pair<int64_t, std::string>> out;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    out[list.Text(0)] = {list.Int(1), list.Text(2)};
  }
  if (rc != SQLITE_DONE) return Error("reading node flags");
  return out;
}

}  // namespace hpcai500
