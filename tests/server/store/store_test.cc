#include "server/store/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/store/leaderboard.h"
#include "tests/common/database_pages.h"
#include "tests/server/store/reference_leaderboard.h"
#include "tests/server/store/store_calls.h"

namespace hpcai500 {
namespace {

// Undoes migration 13 (node health); every older file below starts with
// it, as later migrations are undone first.
constexpr char kUndoNodeHealth[] =
    "DROP TABLE node_flags; DROP TABLE node_preflights; "
    "DROP TABLE node_incidents; ";
// Turns a file of the current schema back into version 2: undoes
// migrations 3 (spec columns), 4 (exits, resume points), 5 (users,
// invalidation, tokens, audit), 6 (queues, holds, node states, inventory),
// 7 (the leaderboard table), 8 (its level column), 9 (regress baselines),
// 10 (submit request ids) and 11 (the maintenance window).
constexpr char kUndoVersions3To12[] =
    "DROP TABLE store_facts; "
    "DROP TABLE maintenance; "
    "DROP TABLE submit_requests; "
    "DROP TABLE regress_baselines; "
    "DROP TABLE leaderboard; "
    "DROP INDEX runs_by_user; "
    "ALTER TABLE runs DROP COLUMN queue; "
    "ALTER TABLE runs DROP COLUMN priority; "
    "ALTER TABLE runs DROP COLUMN held_by; "
    "ALTER TABLE nodes DROP COLUMN state; "
    "ALTER TABLE nodes DROP COLUMN state_reason; "
    "ALTER TABLE nodes DROP COLUMN inventory; "
    "ALTER TABLE attempts DROP COLUMN inventory; "
    "DROP TABLE tokens; "
    "DROP TABLE audit; "
    "ALTER TABLE runs DROP COLUMN user; "
    "ALTER TABLE runs DROP COLUMN invalidated_by; "
    "ALTER TABLE runs DROP COLUMN invalidation_reason; "
    "ALTER TABLE runs DROP COLUMN invalidated_ms; "
    "DROP TABLE exits; "
    "ALTER TABLE attempts DROP COLUMN resume_from_attempt; "
    "ALTER TABLE attempts DROP COLUMN resume_from_epoch; "
    "ALTER TABLE attempts DROP COLUMN resumed_epoch; "
    "ALTER TABLE results DROP COLUMN lost_seconds; "
    "DROP INDEX runs_by_name; "
    "ALTER TABLE runs DROP COLUMN name; "
    "ALTER TABLE runs DROP COLUMN workload; "
    "ALTER TABLE runs DROP COLUMN config; ";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_store_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/store.db";
  }
  void TearDown() override {
    std::remove((path_ + "-wal").c_str());
    std::remove((path_ + "-shm").c_str());
    std::remove(path_.c_str());
    std::remove((path_ + ".lock").c_str());
    rmdir(dir_.c_str());
  }

  static v1::RunSpec Spec(int64_t seed) {
    v1::RunSpec spec;
    spec.set_name("smoke");
    spec.set_workload("image_classification");
    spec.set_config("fashion_mnist_smoke");
    spec.set_nodes(2);
    spec.set_ranks_per_node(1);
    spec.set_seed(seed);
    return spec;
  }

  // Submits one run and makes attempt 1 current.
  static int64_t RunWithAttempt(Store& store) {
    absl::StatusOr<v1::SubmitResponse> submitted =
        CreateSubmission(store, "name: smoke\n", {Spec(1)}, 1000);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    v1::Attempt attempt;
    attempt.set_number(1);
    attempt.set_state("running");
    attempt.add_nodes("a");
    attempt.add_nodes("b");
    EXPECT_TRUE(store.SaveAttempt(submitted->run_ids(0), attempt).ok());
    return submitted->run_ids(0);
  }

  // Runs `sql` on the closed store file directly, as an older build of
  // hpcai500d would have left it.
  void RewriteFile(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(StoreTest, SetsTheSchemaVersion) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<int> version = (*store)->UserVersion();
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, Store::SchemaVersion());
  EXPECT_GE(*version, 1);
}

TEST_F(StoreTest, KeepsOnePromotedBaselinePerSeriesAcrossReopening) {
  int64_t later = 0;
  {
    auto store = *Store::Open(path_);
    EXPECT_EQ(*store->FindBaseline("series-a"), std::nullopt);
    const int64_t earlier = RunWithAttempt(*store);
    later = RunWithAttempt(*store);
    v1::Baseline first;
    first.set_series("series-a");
    first.set_run_id(earlier);
    first.set_promoted_by("alice");
    first.set_promoted_ms(1000);
    ASSERT_TRUE(store->SaveBaseline(first).ok());
    v1::Baseline second = first;
    second.set_run_id(later);
    second.set_promoted_by("bob");
    ASSERT_TRUE(store->SaveBaseline(second).ok());
  }
  auto store = *Store::Open(path_);
  absl::StatusOr<std::optional<v1::Baseline>> found =
      store->FindBaseline("series-a");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->run_id(), later);
  EXPECT_EQ((*found)->promoted_by(), "bob");
  EXPECT_EQ((*found)->promoted_ms(), 1000);
  EXPECT_EQ(*store->FindBaseline("series-b"), std::nullopt);
}

TEST_F(StoreTest, StoresAnEventOnceWhenInsertedTwice) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  EXPECT_EQ(*InsertEvent(*store, run, 1, 0, 1, "line one", ""),
            EventDisposition::kStored);
  EXPECT_EQ(*InsertEvent(*store, run, 1, 0, 1, "line one again", ""),
            EventDisposition::kDuplicate);
  std::vector<StoredEvent> events = *store->LoadEvents(run, 1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].line, "line one");
  EXPECT_EQ(*store->CountEvents(), 1);
}

TEST_F(StoreTest, IgnoresEventsOfAStaleAttempt) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  v1::Attempt second;
  second.set_number(2);
  second.set_state("starting");
  ASSERT_TRUE(store->SaveAttempt(run, second).ok());
  EXPECT_EQ(*InsertEvent(*store, run, 1, 0, 1, "old attempt", ""),
            EventDisposition::kStale);
  EXPECT_EQ(*InsertEvent(*store, run, 2, 0, 1, "new attempt", ""),
            EventDisposition::kStored);
  EXPECT_TRUE(store->LoadEvents(run, 1)->empty());
  EXPECT_EQ(store->LoadEvents(run, 2)->size(), 1u);
  EXPECT_EQ(*InsertEvent(*store, 999, 1, 0, 1, "no such run", ""),
            EventDisposition::kStale);
}

TEST_F(StoreTest, InsertEventsStoresABatchLikeInsertEventDoes) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  ASSERT_EQ(*InsertEvent(*store, run, 1, 0, 1, "stored before", ""),
            EventDisposition::kStored);
  absl::StatusOr<std::vector<EventDisposition>> dispositions =
      store->InsertEvents({
          {run, 1, 0, 1, "again", ""},          // stored by the call before
          {run, 1, 0, 2, "two", ""},            // new
          {run, 1, 1, 2, "", "torn line"},      // new: an error row
          {run, 1, 0, 2, "two again", ""},      // repeated within the batch
          {run, 2, 0, 3, "later attempt", ""},  // not the current attempt
          {999, 1, 0, 1, "no such run", ""},
      });
  ASSERT_TRUE(dispositions.ok()) << dispositions.status();
  EXPECT_EQ(*dispositions,
            (std::vector<EventDisposition>{
                EventDisposition::kDuplicate, EventDisposition::kStored,
                EventDisposition::kStored, EventDisposition::kDuplicate,
                EventDisposition::kStale, EventDisposition::kStale}));
  std::vector<StoredEvent> events = *store->LoadEvents(run, 1);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].line, "stored before");
  EXPECT_EQ(events[1].line, "two");
  EXPECT_EQ(events[2].rank, 1);
  EXPECT_EQ(events[2].error, "torn line");
  EXPECT_EQ(*store->CountEvents(), 3);
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 0), 2);

  // One rank's only (a rank's event log).
  events = *store->LoadEvents(run, 1, /*rank=*/1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rank, 1);
  EXPECT_EQ(events[0].seq, 2);
  EXPECT_EQ(store->LoadEvents(run, 1, /*rank=*/0)->size(), 2u);
  EXPECT_TRUE(store->LoadEvents(run, 1, /*rank=*/7)->empty());
}

TEST_F(StoreTest, SuiteOfSubmissionsIsStoredWholeOrNotAtAll) {
  auto store = *Store::Open(path_);
  v1::RunSpec spec;
  spec.set_name("first");
  spec.set_workload("image_classification");
  spec.set_config("fashion_mnist_smoke");
  v1::RunSpec second = spec;
  second.set_name("second");
  absl::StatusOr<std::vector<v1::SubmitResponse>> both =
      store->CreateSubmissions({{"name: first\n", {spec, spec}, "default", 5},
                                {"name: second\n", {second}, "gpu", 7}},
                               1000, "ana");
  ASSERT_TRUE(both.ok()) << both.status();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0].run_ids_size(), 2);
  ASSERT_EQ((*both)[1].run_ids_size(), 1);
  const v1::Run stored = *store->GetRun((*both)[1].run_ids(0));
  EXPECT_EQ(stored.submission_id(), (*both)[1].submission_id());
  EXPECT_EQ(stored.queue(), "gpu");
  EXPECT_EQ(stored.priority(), 7);
  EXPECT_EQ(stored.user(), "ana");

  // The second submission fails to store (as on a full disk): neither is.
  RewriteFile(
      "CREATE TRIGGER refuse_doomed BEFORE INSERT ON submissions WHEN "
      "NEW.spec_yaml LIKE '%doomed%' BEGIN SELECT RAISE(ABORT, 'refused by "
      "the test'); END;");
  if (HasFatalFailure()) return;
  absl::StatusOr<std::vector<v1::SubmitResponse>> refused =
      store->CreateSubmissions({{"name: fine\n", {spec}, "default", 5},
                                {"name: doomed\n", {second}, "default", 5}},
                               2000, "ana");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("refused by the test"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(store->ListRuns(v1::ListRunsRequest())->size(), 3u)
      << "only the runs of the first call";
}

TEST_F(StoreTest, FullFileIsUnavailableStoresNothingAndRecoversWithSpace) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  EXPECT_FALSE(store->Health().failing);
  const int64_t pages = testing::DatabasePages(path_);
  ASSERT_GT(pages, 0);
  ASSERT_TRUE(store->LimitPagesForTesting(pages).ok());

  // A batch too large for the file left: nothing of it is stored, and the
  // error is the retryable kind, naming the file.
  std::vector<EventRow> rows;
  for (int seq = 1; seq <= 400; ++seq) {
    rows.push_back({run, 1, 0, seq, std::string(512, 'x'), ""});
  }
  absl::StatusOr<std::vector<EventDisposition>> full =
      store->InsertEvents(rows);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kUnavailable)
      << full.status();
  EXPECT_NE(full.status().message().find(path_), std::string::npos);
  EXPECT_EQ(*store->CountEvents(), 0);
  StoreHealth health = store->Health();
  EXPECT_TRUE(health.failing);
  EXPECT_GT(health.failing_since_ms, 0);
  EXPECT_GE(health.write_errors, 1);
  EXPECT_NE(health.last_error.find("full"), std::string::npos)
      << health.last_error;
  // A submission fails the same way: retryable, not a refusal.
  absl::StatusOr<v1::SubmitResponse> submitted = CreateSubmission(
      *store, std::string(300000, '#') + "\nname: big\n", {Spec(2)}, 1000);
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().code(), absl::StatusCode::kUnavailable);

  // Space again: the same batch is stored whole and the store is healthy.
  ASSERT_TRUE(store->LimitPagesForTesting(1 << 30).ok());
  full = store->InsertEvents(rows);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(*store->CountEvents(), 400);
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 0), 400);
  health = store->Health();
  EXPECT_FALSE(health.failing);
  EXPECT_EQ(health.failing_since_ms, 0);
  EXPECT_GE(health.write_errors, 2);
}

TEST_F(StoreTest, SubmitRequestIdIsStoredWithItsRunsAndKeptAcrossReopening) {
  const Store::SubmitRequestId request{"req-1", "digest-a", "nightly"};
  std::vector<v1::SubmitResponse> stored;
  {
    auto store = *Store::Open(path_);
    EXPECT_EQ(*store->FindSubmitRequest("ana", "req-1", 1000), std::nullopt);
    stored = *store->CreateSubmissions(
        {{"name: first\n", {Spec(1), Spec(2)}, "default", 0},
         {"name: second\n", {Spec(3)}, "default", 0}},
        1000, "ana", request);
  }
  auto store = *Store::Open(path_);
  std::optional<Store::StoredSubmitRequest> found =
      *store->FindSubmitRequest("ana", "req-1", 2000);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->spec_digest, "digest-a");
  EXPECT_EQ(found->created_ms, 1000);
  const v1::SubmitResponse expected = CombinedSubmitResponse(stored, "nightly");
  EXPECT_EQ(found->response.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(found->response.run_ids_size(), 3);
  EXPECT_EQ(found->response.submission_id(), stored[0].submission_id());
  EXPECT_EQ(found->response.suite(), "nightly");
  // Another user's id of the same name is another request.
  EXPECT_EQ(*store->FindSubmitRequest("bob", "req-1", 2000), std::nullopt);
}

TEST_F(StoreTest, SubmitRequestIdStoredTwiceStoresNeitherTheRunsNorTheId) {
  auto store = *Store::Open(path_);
  const Store::SubmitRequestId request{"req-1", "digest-a", ""};
  ASSERT_TRUE(
      store
          ->CreateSubmissions({{"a\n", {Spec(1)}, "", 0}}, 1000, "ana", request)
          .ok());
  absl::StatusOr<std::vector<v1::SubmitResponse>> again =
      store->CreateSubmissions({{"b\n", {Spec(2)}, "", 0}}, 1500, "ana",
                               Store::SubmitRequestId{"req-1", "digest-b", ""});
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_EQ(store->ListRuns(v1::ListRunsRequest())->size(), 1u);
  EXPECT_EQ(store->FindSubmitRequest("ana", "req-1", 2000)->value().spec_digest,
            "digest-a");
}

TEST_F(StoreTest, SubmitRequestIdsOlderThanTheRetentionAreForgotten) {
  auto store = *Store::Open(path_);
  const int64_t day = Store::kSubmitRequestRetentionMs;
  ASSERT_TRUE(store
                  ->CreateSubmissions({{"a\n", {Spec(1)}, "", 0}}, 1000, "ana",
                                      Store::SubmitRequestId{"old", "d", ""})
                  .ok());
  EXPECT_NE(*store->FindSubmitRequest("ana", "old", 1000 + day - 1),
            std::nullopt);
  EXPECT_EQ(*store->FindSubmitRequest("ana", "old", 1000 + day), std::nullopt);
  // The next id stored prunes it: the same id can be stored again.
  ASSERT_TRUE(store
                  ->CreateSubmissions({{"a\n", {Spec(1)}, "", 0}}, 1000 + day,
                                      "ana",
                                      Store::SubmitRequestId{"old", "e", ""})
                  .ok());
  EXPECT_EQ(
      store->FindSubmitRequest("ana", "old", 1000 + day)->value().spec_digest,
      "e");
}

TEST_F(StoreTest, InsertEventsOfAnEmptyBatchStoresNothing) {
  auto store = *Store::Open(path_);
  absl::StatusOr<std::vector<EventDisposition>> dispositions =
      store->InsertEvents({});
  ASSERT_TRUE(dispositions.ok()) << dispositions.status();
  EXPECT_TRUE(dispositions->empty());
  EXPECT_EQ(*store->CountEvents(), 0);
}

TEST_F(StoreTest, BatchIsDurableAcrossAReopen) {
  int64_t run = 0;
  {
    auto store = *Store::Open(path_);
    run = RunWithAttempt(*store);
    std::vector<EventRow> rows;
    for (int64_t seq = 1; seq <= 500; ++seq) {
      rows.push_back({run, 1, 0, seq, "line", ""});
    }
    ASSERT_TRUE(store->InsertEvents(rows).ok());
  }
  auto reopened = *Store::Open(path_);
  EXPECT_EQ(*reopened->ContiguousSeq(run, 1, 0), 500);
}

TEST_F(StoreTest, SecondOpenOfTheSameFileFailsNamingTheLockAndItsHolder) {
  absl::StatusOr<std::unique_ptr<Store>> first = Store::Open(path_);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(second.status().message());
  EXPECT_NE(message.find(path_ + ".lock"), std::string::npos) << message;
  EXPECT_NE(message.find("pid " + std::to_string(getpid())), std::string::npos)
      << message;
  // The first keeps working; once it is closed the file can be opened.
  EXPECT_TRUE((*first)->CountEvents().ok());
  first->reset();
  EXPECT_TRUE(Store::Open(path_).ok());
}

// A second open through a symlink to the live file is refused by the
// file's own lock after it made "<link>.lock": it takes that away again,
// and the first owner's lock file stays.
TEST_F(StoreTest, ARefusedOpenLeavesNoLockFileOfItsOwn) {
  absl::StatusOr<std::unique_ptr<Store>> first = Store::Open(path_);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string link = dir_ + "/link.db";
  ASSERT_EQ(::symlink(path_.c_str(), link.c_str()), 0);
  absl::StatusOr<std::unique_ptr<Store>> second = Store::Open(link);
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_NE(::access((link + ".lock").c_str(), F_OK), 0);
  // Refused on the same path, it removes nothing: the file is the first's.
  EXPECT_FALSE(Store::Open(path_).ok());
  EXPECT_EQ(::access((path_ + ".lock").c_str(), F_OK), 0);
  EXPECT_TRUE((*first)->CountEvents().ok());
  std::remove(link.c_str());
}

TEST_F(StoreTest, ContiguousSeqStopsAtTheFirstGap) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 0), 0);
  for (int64_t seq : {1, 2, 4}) {
    ASSERT_EQ(*InsertEvent(*store, run, 1, 0, seq, "x", ""),
              EventDisposition::kStored);
  }
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 0), 2);
  ASSERT_EQ(*InsertEvent(*store, run, 1, 0, 3, "x", ""),
            EventDisposition::kStored);
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 0), 4);
  EXPECT_EQ(*store->ContiguousSeq(run, 1, 1), 0);  // another rank
}

TEST_F(StoreTest, ReopenKeepsSubmissionsRunsResultsAndQueue) {
  int64_t finished = 0;
  int64_t queued = 0;
  {
    auto store = *Store::Open(path_);
    finished = RunWithAttempt(*store);
    v1::Run run = *store->GetRun(finished);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.set_finished_ms(5000);
    run.add_epochs()->set_samples(6000);
    ASSERT_TRUE(store->UpdateRun(run).ok());
    v1::Score score;
    score.set_quality(0.71);
    score.set_target(0.70);
    score.set_exponent(5);
    score.set_samples(12000);
    score.set_valid_flops(1.5e9);
    score.set_reached_target(true);
    score.set_convention("3x forward");
    ASSERT_TRUE(store->SaveResult(finished, score).ok());
    queued = CreateSubmission(*store, "name: q\n", {Spec(5), Spec(6)}, 2000)
                 ->run_ids(0);
    v1::Node node;
    node.set_name("a");
    node.set_slots(4);
    (*node.mutable_labels())["rack"] = "r1";
    ASSERT_TRUE(store->SaveNode(node).ok());
  }
  auto store = *Store::Open(path_);
  v1::Run run = *store->GetRun(finished);
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED);
  ASSERT_TRUE(run.has_score());
  EXPECT_DOUBLE_EQ(run.score().quality(), 0.71);
  EXPECT_DOUBLE_EQ(run.score().valid_flops(), 1.5e9);
  EXPECT_EQ(run.score().samples(), 12000);
  EXPECT_EQ(run.score().convention(), "3x forward");
  ASSERT_EQ(run.attempts_size(), 1);
  EXPECT_EQ(run.attempts(0).nodes_size(), 2);
  ASSERT_EQ(run.epochs_size(), 1);
  EXPECT_EQ(run.epochs(0).samples(), 6000);

  std::vector<v1::Run> waiting =
      *store->ListRunsInStates({v1::RUN_STATE_QUEUED});
  ASSERT_EQ(waiting.size(), 2u);
  EXPECT_EQ(waiting[0].id(), queued);  // queue order kept
  EXPECT_EQ(waiting[0].spec().seed(), 5);
  EXPECT_EQ(waiting[1].repetition(), 2);

  std::vector<v1::Node> nodes = *store->ListNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].slots(), 4);
  EXPECT_EQ(nodes[0].labels().at("rack"), "r1");
}

TEST_F(StoreTest, ResultKeepsEnergyAndValidFlopsPerWatt) {
  const int64_t run = RunWithAttempt(**Store::Open(path_));
  {
    auto store = *Store::Open(path_);
    v1::Score score;
    score.set_valid_flops(1.5e9);
    score.set_train_seconds(12);
    score.set_energy_joules(5400);
    score.set_valid_flops_per_watt(3.33e6);
    ASSERT_TRUE(store->SaveResult(run, score).ok());
  }
  v1::Run reopened = *(*Store::Open(path_))->GetRun(run);
  EXPECT_DOUBLE_EQ(reopened.score().energy_joules(), 5400);
  EXPECT_DOUBLE_EQ(reopened.score().valid_flops_per_watt(), 3.33e6);
}

// A file written by a version-1 hpcai500d (no energy columns) is migrated
// on open and keeps its results, reading 0 for what it did not record.
TEST_F(StoreTest, VersionOneFileMigratesKeepingItsResults) {
  int64_t run = 0;
  {
    auto store = *Store::Open(path_);
    run = RunWithAttempt(*store);
    v1::Score score;
    score.set_valid_flops(1.5e9);
    score.set_energy_joules(5400);
    ASSERT_TRUE(store->SaveResult(run, score).ok());
  }
  // Turn the file back into version 1.
  RewriteFile(
      kUndoNodeHealth + std::string(kUndoVersions3To12) +
      std::string("ALTER TABLE results DROP COLUMN energy_joules; "
                  "ALTER TABLE results DROP COLUMN valid_flops_per_watt; "
                  "PRAGMA user_version = 1;"));
  if (HasFatalFailure()) return;
  auto store = *Store::Open(path_);
  EXPECT_EQ(*store->UserVersion(), Store::SchemaVersion());
  v1::Run migrated = *store->GetRun(run);
  EXPECT_DOUBLE_EQ(migrated.score().valid_flops(), 1.5e9);
  EXPECT_DOUBLE_EQ(migrated.score().energy_joules(), 0);
}

// Stores one run named `name` of `config` in `state`; returns its id.
int64_t AddRun(Store& store, const std::string& name, const std::string& config,
               v1::RunState state) {
  v1::RunSpec spec;
  spec.set_name(name);
  spec.set_workload("image_classification");
  spec.set_config(config);
  absl::StatusOr<v1::SubmitResponse> submitted =
      CreateSubmission(store, "name: " + name + "\n", {spec}, 1000);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  v1::Run run = *store.GetRun(submitted->run_ids(0));
  run.set_state(state);
  EXPECT_TRUE(store.UpdateRun(run).ok());
  return run.id();
}

std::vector<int64_t> Ids(const absl::StatusOr<std::vector<v1::Run>>& runs) {
  EXPECT_TRUE(runs.ok()) << runs.status();
  std::vector<int64_t> ids;
  if (runs.ok()) {
    for (const v1::Run& run : *runs) ids.push_back(run.id());
  }
  return ids;
}

TEST_F(StoreTest, KeepsTheMaintenanceWindowAcrossReopeningUntilItEnds) {
  {
    auto store = *Store::Open(path_);
    EXPECT_EQ(store->LoadMaintenance()->until_ms(), 0);
    v1::MaintenanceWindow window;
    window.set_until_ms(5000);
    window.set_started_ms(1000);
    window.set_reason("upgrade");
    window.set_started_by("root");
    ASSERT_TRUE(store->SaveMaintenance(window).ok());
  }
  auto store = *Store::Open(path_);
  v1::MaintenanceWindow loaded = *store->LoadMaintenance();
  EXPECT_EQ(loaded.until_ms(), 5000);
  EXPECT_EQ(loaded.started_ms(), 1000);
  EXPECT_EQ(loaded.reason(), "upgrade");
  EXPECT_EQ(loaded.started_by(), "root");
  ASSERT_TRUE(store->SaveMaintenance(v1::MaintenanceWindow()).ok());
  EXPECT_EQ(store->LoadMaintenance()->until_ms(), 0);
}

TEST_F(StoreTest, KeepsQueuesHoldsNodeStatesAndInventoriesAcrossReopening) {
  int64_t run = 0;
  {
    auto store = *Store::Open(path_);
    absl::StatusOr<v1::SubmitResponse> submitted = CreateSubmission(
        *store, "name: smoke\n", {Spec(1)}, 1000, "alice", "gpu", 250);
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    run = submitted->run_ids(0);
    v1::Run stored = *store->GetRun(run);
    stored.set_held_by("bob");
    ASSERT_TRUE(store->UpdateRun(stored).ok());
    v1::Attempt attempt;
    attempt.set_number(1);
    v1::Inventory& inventory = (*attempt.mutable_inventory())["a"];
    inventory.set_cpu_model("Xeon");
    inventory.add_devices()->set_model("H200");
    ASSERT_TRUE(store->SaveAttempt(run, attempt).ok());
    v1::Node node;
    node.set_name("a");
    node.set_state("drained");
    node.set_state_reason("fan");
    node.mutable_inventory()->set_cpu_cores(64);
    ASSERT_TRUE(store->SaveNode(node).ok());
  }
  auto store = *Store::Open(path_);
  v1::Run stored = *store->GetRun(run);
  EXPECT_EQ(stored.queue(), "gpu");
  EXPECT_EQ(stored.priority(), 250);
  EXPECT_EQ(stored.held_by(), "bob");
  ASSERT_EQ(stored.attempts_size(), 1);
  ASSERT_EQ(stored.attempts(0).inventory().count("a"), 1u);
  EXPECT_EQ(stored.attempts(0).inventory().at("a").cpu_model(), "Xeon");
  EXPECT_EQ(stored.attempts(0).inventory().at("a").devices(0).model(), "H200");
  std::vector<v1::Node> nodes = *store->ListNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].state(), "drained");
  EXPECT_EQ(nodes[0].state_reason(), "fan");
  EXPECT_EQ(nodes[0].inventory().cpu_cores(), 64);
}

TEST_F(StoreTest, ListRunsMatchesEveryFilterGivenNewestFirst) {
  auto store = *Store::Open(path_);
  const int64_t a1 = AddRun(*store, "a", "smoke", v1::RUN_STATE_SUCCEEDED);
  const int64_t b1 = AddRun(*store, "b", "smoke", v1::RUN_STATE_SUCCEEDED);
  const int64_t a2 = AddRun(*store, "a", "smoke", v1::RUN_STATE_FAILED);
  const int64_t a3 = AddRun(*store, "a", "full", v1::RUN_STATE_SUCCEEDED);
  const int64_t a4 = AddRun(*store, "a", "smoke", v1::RUN_STATE_SUCCEEDED);

  v1::ListRunsRequest filter;
  EXPECT_EQ(Ids(store->ListRuns(filter)),
            (std::vector<int64_t>{a4, a3, a2, b1, a1}));
  filter.set_name("a");
  EXPECT_EQ(Ids(store->ListRuns(filter)),
            (std::vector<int64_t>{a4, a3, a2, a1}));
  filter.set_config("smoke");
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{a4, a2, a1}));
  filter.set_state(v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{a4, a1}));
  filter.set_workload("extreme_weather");
  EXPECT_TRUE(Ids(store->ListRuns(filter)).empty());

  v1::ListRunsRequest by_state;
  by_state.set_state(v1::RUN_STATE_FAILED);
  EXPECT_EQ(Ids(store->ListRuns(by_state)), (std::vector<int64_t>{a2}));
  v1::ListRunsRequest no_such_name;
  no_such_name.set_name("a' OR '1'='1");  // bound, never spliced into SQL
  EXPECT_TRUE(Ids(store->ListRuns(no_such_name)).empty());
}

TEST_F(StoreTest, ListRunsPagesBackwardsWithBeforeId) {
  auto store = *Store::Open(path_);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(AddRun(*store, "a", "smoke", v1::RUN_STATE_SUCCEEDED));
    AddRun(*store, "other", "smoke", v1::RUN_STATE_SUCCEEDED);
  }
  v1::ListRunsRequest page;
  page.set_name("a");
  page.set_limit(2);
  EXPECT_EQ(Ids(store->ListRuns(page)), (std::vector<int64_t>{ids[4], ids[3]}));
  page.set_before_id(ids[3]);
  EXPECT_EQ(Ids(store->ListRuns(page)), (std::vector<int64_t>{ids[2], ids[1]}));
  page.set_before_id(ids[1]);
  EXPECT_EQ(Ids(store->ListRuns(page)), (std::vector<int64_t>{ids[0]}));
  page.set_before_id(ids[0]);
  EXPECT_TRUE(Ids(store->ListRuns(page)).empty());
}

TEST_F(StoreTest, VersionTwoFileMigratesAndListsItsRunsByName) {
  int64_t run = 0;
  {
    auto store = *Store::Open(path_);
    run = AddRun(*store, "nightly", "smoke", v1::RUN_STATE_SUCCEEDED);
    AddRun(*store, "other", "smoke", v1::RUN_STATE_SUCCEEDED);
  }
  // Turn the file back into version 2: no spec columns.
  RewriteFile(kUndoNodeHealth + std::string(kUndoVersions3To12) +
              "PRAGMA user_version = 2;");
  if (HasFatalFailure()) return;
  auto store = *Store::Open(path_);
  EXPECT_EQ(*store->UserVersion(), Store::SchemaVersion());
  v1::ListRunsRequest filter;
  filter.set_name("nightly");
  filter.set_workload("image_classification");
  filter.set_config("smoke");
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{run}));
}

TEST_F(StoreTest, NodeHealthKeepsIncidentsPreflightsAndFlags) {
  auto store = *Store::Open(path_);
  v1::NodeIncident incident;
  incident.set_node("c");
  incident.set_time_ms(5);
  incident.set_kind("straggler");
  incident.set_run_id(7);
  incident.set_rank(2);
  incident.set_detail("rank 2 slower");
  const int64_t first = *store->AddIncident(incident);
  incident.set_run_id(0);
  incident.set_kind("preflight");
  EXPECT_EQ(*store->AddIncident(incident), first + 1);
  EXPECT_EQ(store->ListIncidents("c", 0, 10)->size(), 2u);
  ASSERT_EQ(store->ListIncidents("", 7, 10)->size(), 1u);
  EXPECT_EQ((*store->ListIncidents("", 7, 10))[0].detail(), "rank 2 slower");
  EXPECT_EQ(store->CountIncidents()->at("c"), 2);
  for (int64_t t : {1, 2}) {
    for (const char* node : {"a", "b"}) {
      v1::PreflightResult r;
      r.set_node(node);
      r.set_time_ms(t);
      (*r.mutable_figures())["gemm_gflops"] = 10.0 * t;
      ASSERT_TRUE(store->SavePreflight(r).ok());
    }
  }
  ASSERT_EQ(store->PreflightHistory("a", 10)->size(), 2u);
  EXPECT_EQ((*store->PreflightHistory("a", 10))[0].time_ms(), 2);  // newest
  const std::vector<v1::PreflightResult> latest = *store->LatestPreflights();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[1].node(), "b");
  EXPECT_EQ(latest[1].figures().at("gemm_gflops"), 20);
  ASSERT_TRUE(store->SaveFlag("c", 5, "straggler: rank 2 slower").ok());
  EXPECT_EQ(store->ListFlags()->at("c").second, "straggler: rank 2 slower");
  ASSERT_TRUE(store->ClearFlag("c").ok());
  EXPECT_TRUE(store->ListFlags()->empty());
}

TEST_F(StoreTest, CorruptFileIsAnErrorNamingIt) {
  {
    std::ofstream out(path_);
    out << std::string(4096, 'x');
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(path_), std::string::npos)
      << store.status();
}

TEST_F(StoreTest, GetRunOfUnknownIdIsNotFound) {
  auto store = *Store::Open(path_);
  EXPECT_TRUE(absl::IsNotFound(store->GetRun(42).status()));
}

TEST_F(StoreTest, KeepsExitsAndResumePointsAcrossReopening) {
  int64_t run = 0;
  {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    run = RunWithAttempt(**store);
    v1::Attempt second;
    second.set_number(2);
    second.set_state("running");
    second.add_nodes("b");
    second.set_resume_from_attempt(1);
    second.set_resume_from_epoch(3);
    second.set_resumed_epoch(3);
    ASSERT_TRUE((*store)->SaveAttempt(run, second).ok());
    v1::WorkerExited exit;
    exit.mutable_key()->set_run_id(run);
    exit.mutable_key()->set_attempt(2);
    exit.set_rank(1);
    exit.set_signal(9);
    exit.set_exit_code(-1);
    exit.set_stderr_tail("killed");
    ASSERT_TRUE((*store)->SaveExit(exit).ok());
    ASSERT_TRUE((*store)->SaveExit(exit).ok());  // a resent exit: one row
    v1::Score score;
    score.set_train_seconds(10);
    score.set_lost_seconds(2.5);
    ASSERT_TRUE((*store)->SaveResult(run, score).ok());
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<v1::WorkerExited>> exits =
      (*store)->LoadExits(run, 2);
  ASSERT_TRUE(exits.ok()) << exits.status();
  ASSERT_EQ(exits->size(), 1u);
  EXPECT_EQ((*exits)[0].rank(), 1);
  EXPECT_EQ((*exits)[0].signal(), 9);
  EXPECT_EQ((*exits)[0].stderr_tail(), "killed");
  EXPECT_TRUE((*store)->LoadExits(run, 1)->empty());
  absl::StatusOr<v1::Run> loaded = (*store)->GetRun(run);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->attempts_size(), 2);
  EXPECT_EQ(loaded->attempts(1).resume_from_attempt(), 1);
  EXPECT_EQ(loaded->attempts(1).resume_from_epoch(), 3);
  EXPECT_EQ(loaded->attempts(1).resumed_epoch(), 3);
  EXPECT_DOUBLE_EQ(loaded->score().lost_seconds(), 2.5);
}

TEST_F(StoreTest, ListRunsFiltersByUserQueueAndCreationTime) {
  auto store = *Store::Open(path_);
  auto add = [&](int64_t created_ms, const std::string& user,
                 const std::string& queue) {
    absl::StatusOr<v1::SubmitResponse> submitted = CreateSubmission(
        *store, "name: smoke\n", {Spec(1)}, created_ms, user, queue);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted->run_ids(0);
  };
  const int64_t a1 = add(1000, "alice", "cpu");
  const int64_t b1 = add(2000, "bob", "gpu");
  const int64_t a2 = add(3000, "alice", "gpu");
  const int64_t a3 = add(4000, "alice", "cpu");

  v1::ListRunsRequest filter;
  filter.set_user("alice");
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{a3, a2, a1}));
  filter.set_since_ms(2000);
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{a3, a2}));
  filter.set_until_ms(4000);  // before, not at
  EXPECT_EQ(Ids(store->ListRuns(filter)), (std::vector<int64_t>{a2}));
  filter.set_queue("cpu");
  EXPECT_TRUE(Ids(store->ListRuns(filter)).empty());

  v1::ListRunsRequest by_queue;
  by_queue.set_queue("gpu");
  EXPECT_EQ(Ids(store->ListRuns(by_queue)), (std::vector<int64_t>{a2, b1}));
  v1::ListRunsRequest window;
  window.set_since_ms(2000);
  window.set_until_ms(3001);
  window.set_limit(1);
  EXPECT_EQ(Ids(store->ListRuns(window)), (std::vector<int64_t>{a2}));
  v1::ListRunsRequest injected;
  injected.set_user("alice' OR '1'='1");
  EXPECT_TRUE(Ids(store->ListRuns(injected)).empty());
}

// One run of a planned submission: how it ends and, when it succeeded, its
// Valid FLOPS.
struct PlannedRun {
  v1::RunState state = v1::RUN_STATE_SUCCEEDED;
  double valid_flops = 0;
};

// Stores a submission of `runs` (its spec asks for `repetitions`, which may
// be more than were stored) and plays each run to its state, saving a score
// for each succeeded one the way the coordinator does (score, then state).
// Returns the run ids.
// Each run gets one attempt on a node whose inventory names a device model
// and versions by the submission's level.
std::vector<int64_t> AddSubmission(Store& store, const std::string& workload,
                                   const std::string& config, bool ranked,
                                   int repetitions,
                                   const std::vector<PlannedRun>& runs,
                                   const std::string& level = "system") {
  std::vector<v1::RunSpec> specs;
  for (size_t i = 0; i < runs.size(); ++i) {
    v1::RunSpec spec;
    spec.set_name(absl::StrCat(config, "-sub"));
    spec.set_system("sys-" + config);
    spec.set_level(level);
    spec.set_workload(workload);
    spec.set_config(config);
    spec.set_ranked(ranked);
    spec.set_repetitions(repetitions);
    spec.set_seed(static_cast<int64_t>(i));
    specs.push_back(spec);
  }
  absl::StatusOr<v1::SubmitResponse> submitted =
      CreateSubmission(store, "name: x\n", specs, 1000);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  std::vector<int64_t> ids(submitted->run_ids().begin(),
                           submitted->run_ids().end());
  for (size_t i = 0; i < runs.size(); ++i) {
    v1::Attempt attempt;
    attempt.set_number(1);
    attempt.add_nodes("node-" + level);
    v1::Inventory& inventory = (*attempt.mutable_inventory())["node-" + level];
    inventory.add_devices()->set_model("GPU-" + level);
    (*inventory.mutable_versions())["nccl"] = "2." + level;
    EXPECT_TRUE(store.SaveAttempt(ids[i], attempt).ok());
    v1::Run run = *store.GetRun(ids[i]);
    if (runs[i].state == v1::RUN_STATE_SUCCEEDED) {
      v1::Score score;
      score.set_valid_flops(runs[i].valid_flops);
      score.set_flops(3 * runs[i].valid_flops + 1);
      score.set_quality(0.5 + runs[i].valid_flops / 1000);
      score.set_target(0.75);
      EXPECT_TRUE(store.SaveResult(ids[i], score).ok());
    }
    run.set_state(runs[i].state);
    run.set_finished_ms(2000 + ids[i]);
    EXPECT_TRUE(store.UpdateRun(run).ok());
  }
  return ids;
}

// Every stored run, for BuildLeaderboard.
std::vector<v1::Run> AllRuns(Store& store) {
  v1::ListRunsRequest all;  // limit 0: every run
  absl::StatusOr<std::vector<v1::Run>> runs = store.ListRuns(all);
  EXPECT_TRUE(runs.ok()) << runs.status();
  return runs.ok() ? *runs : std::vector<v1::Run>();
}

// Checks that the store's leaderboard gives what BuildLeaderboard gives over
// every stored run, for filters and pages.
void ExpectLeaderboardMatchesBuild(Store& store) {
  const std::vector<v1::Run> runs = AllRuns(store);
  std::vector<v1::LeaderboardRequest> requests;
  for (const auto& [workload, config] :
       std::vector<std::pair<std::string, std::string>>{
           {"", ""},
           {"image_classification", ""},
           {"extreme_weather", ""},
           {"", "cfg-b"},
           {"image_classification", "cfg-a"},
           {"image_classification", "cfg-c"}}) {
    for (const auto& [limit, offset] :
         std::vector<std::pair<int, int>>{{0, 0},
                                          {1, 0},
                                          {3, 0},
                                          {3, 2},
                                          {5, 4},
                                          {7, 11},
                                          {0, 6},
                                          {2, 1000},
                                          {10'000, 0}}) {
      v1::LeaderboardRequest request;
      request.set_workload(workload);
      request.set_config(config);
      request.set_limit(limit);
      request.set_offset(offset);
      requests.push_back(request);
      // The same page of one level, of ranked rows only, and sorted.
      v1::LeaderboardRequest of_level = request;
      of_level.set_level("hardware");
      requests.push_back(of_level);
      of_level.set_ranked("ranked");
      requests.push_back(of_level);
      v1::LeaderboardRequest unranked = request;
      unranked.set_ranked("unranked");
      requests.push_back(unranked);
      for (const char* key : {"flops", "system", "rank", "date"}) {
        v1::LeaderboardRequest sorted = request;
        sorted.set_sort(key);
        sorted.set_ascending(limit % 2 == 1);
        requests.push_back(sorted);
      }
    }
  }
  for (const v1::LeaderboardRequest& request : requests) {
    absl::StatusOr<v1::LeaderboardResponse> stored = store.Leaderboard(request);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->DebugString(),
              BuildLeaderboard(runs, request).DebugString())
        << "request: " << request.ShortDebugString();
  }
}

TEST_F(StoreTest, LeaderboardTableGivesWhatBuildLeaderboardGives) {
  auto store = *Store::Open(path_);
  const std::string ic = "image_classification";
  const std::string ewa = "extreme_weather";
  const PlannedRun failed{v1::RUN_STATE_FAILED, 0};
  const PlannedRun running{v1::RUN_STATE_RUNNING, 0};
  auto ok = [](double v) { return PlannedRun{v1::RUN_STATE_SUCCEEDED, v}; };
  // Hand-picked cases: R = 1..4, ties, unranked, a failed or unfinished
  // repetition, a repetition never stored.
  AddSubmission(*store, ic, "cfg-a", true, 1, {ok(10)});
  AddSubmission(*store, ic, "cfg-a", true, 2, {ok(20), ok(30)});
  AddSubmission(*store, ic, "cfg-a", true, 3, {ok(5), ok(50), ok(40)});
  AddSubmission(*store, ic, "cfg-a", false, 4, {ok(1), ok(2), ok(3), ok(4)});
  AddSubmission(*store, ic, "cfg-a", true, 1, {ok(25)});  // ties 20,30's 25
  AddSubmission(*store, ic, "cfg-a", true, 2, {ok(99), failed});
  AddSubmission(*store, ic, "cfg-a", true, 3, {ok(70), ok(80), running});
  AddSubmission(*store, ic, "cfg-a", true, 2, {ok(60)});  // 1 of 2 stored
  const std::vector<int64_t> invalidated =
      AddSubmission(*store, ic, "cfg-b", true, 2, {ok(11), ok(12)});
  AddSubmission(*store, ic, "cfg-b", true, 1, {ok(13)});
  AddSubmission(*store, ewa, "cfg-c", true, 1, {ok(14)});
  // Many more, drawn with a fixed seed: every R, state mix, ranked or not,
  // in three configs of two workloads, Valid FLOPS from a small set (ties).
  std::mt19937 random(13);
  const std::vector<std::pair<std::string, std::string>> groups = {
      {ic, "cfg-a"}, {ic, "cfg-b"}, {ewa, "cfg-c"}};
  for (int i = 0; i < 60; ++i) {
    const int repetitions = 1 + static_cast<int>(random() % 4);
    std::vector<PlannedRun> runs;
    for (int r = 0; r < repetitions; ++r) {
      const unsigned draw = random() % 10;
      runs.push_back(draw == 0   ? failed
                     : draw == 1 ? running
                                 : ok(static_cast<double>(random() % 8)));
    }
    const auto& [workload, config] = groups[random() % groups.size()];
    const char* level = random() % 3 == 0 ? "hardware" : "system";
    const std::vector<int64_t> ids = AddSubmission(
        *store, workload, config, random() % 4 != 0, repetitions, runs, level);
    if (random() % 8 == 0) {
      ASSERT_TRUE(store->InvalidateRun(ids.back(), "admin", "bad", 5).ok());
    }
  }
  ASSERT_TRUE(store->InvalidateRun(invalidated[1], "admin", "bad", 5).ok());
  ExpectLeaderboardMatchesBuild(*store);
  ASSERT_GT(BuildLeaderboard(AllRuns(*store), {}).total(), 20)
      << "the case should list many submissions";

  // A result replaced later moves its row.
  v1::Score better;
  better.set_valid_flops(1e9);
  better.set_target(0.75);
  ASSERT_TRUE(store->SaveResult(1, better).ok());
  ExpectLeaderboardMatchesBuild(*store);
  v1::LeaderboardRequest cfg_a;
  cfg_a.set_config("cfg-a");
  EXPECT_EQ(store->Leaderboard(cfg_a)->rows(0).submission_id(), 1);
}

TEST_F(StoreTest, VersionSixFileGetsItsLeaderboardFilled) {
  {
    auto store = *Store::Open(path_);
    auto ok = [](double v) { return PlannedRun{v1::RUN_STATE_SUCCEEDED, v}; };
    AddSubmission(*store, "image_classification", "cfg-a", true, 1, {ok(3)});
    AddSubmission(*store, "image_classification", "cfg-a", true, 2,
                  {ok(1), ok(9)});
    AddSubmission(*store, "image_classification", "cfg-a", true, 2,
                  {ok(1), PlannedRun{v1::RUN_STATE_FAILED, 0}});
  }
  RewriteFile(kUndoNodeHealth +
              std::string("DROP TABLE store_facts; DROP TABLE maintenance; "
                          "DROP TABLE submit_requests; "
                          "DROP TABLE regress_baselines; "
                          "DROP TABLE leaderboard; PRAGMA user_version = 6;"));
  if (HasFatalFailure()) return;
  auto store = *Store::Open(path_);
  EXPECT_EQ(*store->UserVersion(), Store::SchemaVersion());
  EXPECT_EQ(store->Leaderboard({})->total(), 2);
  ExpectLeaderboardMatchesBuild(*store);
}

// A version-7 file (its rows without level, devices or versions) gets its
// rows written again, so the level filter finds them.
TEST_F(StoreTest, VersionSevenFileGetsItsLeaderboardRowsRewritten) {
  {
    auto store = *Store::Open(path_);
    auto ok = [](double v) { return PlannedRun{v1::RUN_STATE_SUCCEEDED, v}; };
    AddSubmission(*store, "image_classification", "cfg-a", true, 1, {ok(3)},
                  "hardware");
    AddSubmission(*store, "image_classification", "cfg-a", true, 1, {ok(5)});
  }
  RewriteFile(
      kUndoNodeHealth +
      std::string(
          "DROP TABLE store_facts; DROP TABLE maintenance; "
          "DROP TABLE submit_requests; "
          "DROP TABLE regress_baselines; "
          "DROP INDEX leaderboard_level_order; "
          "ALTER TABLE leaderboard DROP COLUMN level; "
          "UPDATE leaderboard SET row = x''; PRAGMA user_version = 7;"));
  if (HasFatalFailure()) return;
  auto store = *Store::Open(path_);
  EXPECT_EQ(*store->UserVersion(), Store::SchemaVersion());
  v1::LeaderboardRequest hardware;
  hardware.set_level("hardware");
  const v1::LeaderboardResponse board = *store->Leaderboard(hardware);
  ASSERT_EQ(board.rows_size(), 1);
  EXPECT_EQ(board.rows(0).rank(), 1) << "ranked within its level";
  EXPECT_EQ(board.rows(0).device_model(), "GPU-hardware");
  EXPECT_EQ(board.rows(0).versions().at("nccl"), "2.hardware");
  ExpectLeaderboardMatchesBuild(*store);
}

// A file whose rows were computed by other rules (another registry's
// reference points, an older row format) gets every row written again when
// this binary opens it; a file under these rules is left alone.
TEST_F(StoreTest, RowsOfOtherLeaderboardRulesAreWrittenAgainAtOpen) {
  {
    auto store = *Store::Open(path_);
    auto ok = [](double v) { return PlannedRun{v1::RUN_STATE_SUCCEEDED, v}; };
    AddSubmission(*store, "image_classification", "cfg-a", true, 1, {ok(3)});
  }
  RewriteFile(
      "UPDATE leaderboard SET row = x'ff'; "
      "UPDATE store_facts SET value = 'older rules';");
  if (HasFatalFailure()) return;
  {
    auto store = *Store::Open(path_);
    const v1::LeaderboardResponse board = *store->Leaderboard({});
    ASSERT_EQ(board.rows_size(), 1);
    EXPECT_DOUBLE_EQ(board.rows(0).valid_flops(), 3);
    EXPECT_EQ(board.rows(0).convergence().verdict(), "unchecked");
    ExpectLeaderboardMatchesBuild(*store);
  }
  // Same rules: the rows are not computed again (an emptied row stays so).
  RewriteFile("UPDATE leaderboard SET row = x'ff';");
  if (HasFatalFailure()) return;
  auto store = *Store::Open(path_);
  EXPECT_EQ(store->Leaderboard({}).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(StoreTest, ListRunsAttachesEachRunItsOwnAttemptsAndScore) {
  auto store = *Store::Open(path_);
  const int64_t first = RunWithAttempt(*store);
  const int64_t second = RunWithAttempt(*store);
  const int64_t third = RunWithAttempt(*store);
  v1::Attempt retry;
  retry.set_number(2);
  retry.add_nodes("c");
  ASSERT_TRUE(store->SaveAttempt(second, retry).ok());
  v1::Score score;
  score.set_valid_flops(7);
  ASSERT_TRUE(store->SaveResult(third, score).ok());

  const std::vector<v1::Run> runs = *store->ListRuns({});
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].id(), third);
  EXPECT_EQ(runs[0].attempts_size(), 1);
  EXPECT_DOUBLE_EQ(runs[0].score().valid_flops(), 7);
  EXPECT_EQ(runs[1].id(), second);
  ASSERT_EQ(runs[1].attempts_size(), 2);
  EXPECT_EQ(runs[1].attempts(1).nodes(0), "c");
  EXPECT_FALSE(runs[1].has_score());
  EXPECT_EQ(runs[2].id(), first);
  EXPECT_EQ(runs[2].attempts_size(), 1);
  EXPECT_EQ(runs[2].attempts(0).nodes_size(), 2);
}

// A writer stuck on the file (another connection holds the write lock, so
// the store's writing call waits inside mu_) does not hold up reads: they
// go through the read connections.
TEST_F(StoreTest, ReadsDoNotWaitForABlockedWriter) {
  auto store = *Store::Open(path_);
  const int64_t run = RunWithAttempt(*store);
  AddSubmission(*store, "image_classification", "cfg-a", true, 1,
                {PlannedRun{v1::RUN_STATE_SUCCEEDED, 5}});
  ASSERT_TRUE(InsertEvent(*store, run, 1, 0, 1, "line one", "").ok());
  v1::WorkerExited exit;
  exit.mutable_key()->set_run_id(run);
  exit.mutable_key()->set_attempt(1);
  exit.set_stderr_tail("bye\n");
  ASSERT_TRUE(store->SaveExit(exit).ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr),
            SQLITE_OK);
  std::atomic<bool> written{false};
  absl::Status write_status;
  std::thread writer([&] {
    v1::Score score;
    write_status = store->SaveResult(run, score);  // waits for `other`
    written = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(store->GetRun(run).ok());
  EXPECT_EQ(store->ListRuns({})->size(), 2u);
  EXPECT_EQ(store->Leaderboard({})->total(), 1);
  // The run page's events and stderr (polled while a run is live). No
  // ASSERT here: the writer thread must be joined below.
  absl::StatusOr<std::vector<StoredEvent>> events = store->LoadEvents(run, 1);
  EXPECT_TRUE(events.ok() && events->size() == 1 &&
              events->front().line == "line one")
      << events.status();
  absl::StatusOr<std::vector<v1::WorkerExited>> exits =
      store->ReadExits(run, 1);
  EXPECT_TRUE(exits.ok() && exits->size() == 1 &&
              exits->front().stderr_tail() == "bye\n")
      << exits.status();
  EXPECT_FALSE(written) << "the reads ran while the writer still waited";
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr),
            SQLITE_OK);
  writer.join();
  sqlite3_close(other);
  EXPECT_TRUE(write_status.ok()) << write_status;
}

}  // namespace
}  // namespace hpcai500
