// The Store's runs: submissions, runs and their attempts, results, the
// leaderboard table kept from them, invalidation and baselines.
#include <sqlite3.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "server/store/internal/store_queries.h"
#include "server/store/internal/store_schema.h"
#include "server/store/internal/store_writes.h"
#include "server/store/leaderboard.h"
#include "server/store/store.h"

namespace hpcai500 {
namespace {

using server_internal::Blob;
using server_internal::kRunColumns;
using server_internal::SqlQuery;
using Statement = server_internal::SqliteStatement;

// An attempt with only its inventory: what the attempts table's inventory
// column holds.
v1::Attempt InventoryOnly(const v1::Attempt& attempt) {
  v1::Attempt only;
  *only.mutable_inventory() = attempt.inventory();
  return only;
}

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

}  // namespace

absl::StatusOr<std::vector<v1::SubmitResponse>> Store::CreateSubmissions(
    const std::vector<NewSubmission>& submissions, int64_t now_ms,
    const std::string& user, const std::optional<SubmitRequestId>& request) {
  absl::MutexLock lock(&mu_);
  return InTransaction(
      [&]() -> absl::StatusOr<std::vector<v1::SubmitResponse>> {
        std::vector<v1::SubmitResponse> responses;
        for (const NewSubmission& submission : submissions) {
          ASSIGN_OR_RETURN(v1::SubmitResponse response,
                           InsertSubmissionLocked(submission, now_ms, user));
          responses.push_back(std::move(response));
        }
        if (request.has_value()) {
          RETURN_IF_ERROR(SaveSubmitRequestLocked(
              *request, user, now_ms,
              CombinedSubmitResponse(responses, request->suite)));
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

absl::Status Store::UpdateRun(const v1::Run& run) {
  absl::MutexLock lock(&mu_);
  // The run's progress, its epochs and latest forecast, in one blob, and
  // the fingerprint it got as it ended.
  v1::Run epochs_only;
  *epochs_only.mutable_epochs() = run.epochs();
  if (run.has_forecast()) *epochs_only.mutable_forecast() = run.forecast();
  if (run.has_fingerprint()) {
    *epochs_only.mutable_fingerprint() = run.fingerprint();
  }
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
        if (epochs_only.has_forecast()) {
          *run.mutable_forecast() = std::move(*epochs_only.mutable_forecast());
        }
        if (epochs_only.has_fingerprint()) {
          *run.mutable_fingerprint() =
              std::move(*epochs_only.mutable_fingerprint());
        }
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
  return Count("SELECT COUNT(*) FROM runs WHERE user = ? AND state = ?",
               "counting queued runs", user,
               static_cast<int32_t>(v1::RUN_STATE_QUEUED));
}

absl::StatusOr<std::optional<std::string>> Store::OtherSweepOwner(
    const std::string& sweep, const std::string& user) {
  absl::MutexLock lock(&mu_);
  // A serialized RunSpec holds its sweep id's bytes as they are: SQL
  // narrows the rows to those, and each one's parsed spec decides.
  Statement find(db_,
                 "SELECT user, spec FROM runs WHERE user <> ?1 AND "
                 "instr(spec, ?2) > 0");
  find.BindAll(user, Blob{sweep});
  int rc;
  while ((rc = find.Step()) == SQLITE_ROW) {
    v1::RunSpec spec;
    if (spec.ParseFromString(find.Text(1)) && spec.sweep() == sweep) {
      return find.Text(0);
    }
  }
  if (rc != SQLITE_DONE) return Error("looking up a sweep's runs");
  return std::nullopt;
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

}  // namespace hpcai500
