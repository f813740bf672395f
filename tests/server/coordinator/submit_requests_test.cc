// Idempotent submits through the Coordinator: a request id sent again is
// answered with the first submit's runs, never stored twice.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator.h"
#include "tests/common/fake_clock.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::FakeClock;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::string SpecYaml(const std::string& name, int repetitions = 1) {
  return absl::StrCat(
      "name: ", name,
      "\nworkload: image_classification\nconfig: fashion_mnist_smoke\n"
      "level: free\nnodes: 1\nranks_per_node: 1\ndevice: cpu\n"
      "batch_size: 64\nprecision: fp32\nseed: 42\nsystem: test-box\n"
      "repetitions: ",
      repetitions, "\n");
}

// A coordinator that knows no node yet: every submit is queued.
class SubmitRequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_submit_requests_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    store_ = *Store::Open(dir_ + "/c.db");
    auto created =
        Coordinator::Create(store_.get(), &clock_, &Registry::Builtin(), {});
    ASSERT_TRUE(created.ok()) << created.status();
    coordinator_ = *std::move(created);
  }
  void TearDown() override {
    coordinator_.reset();
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) {
      std::remove((dir_ + "/c.db" + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }

  int64_t StoredRuns() { return store_->ListRuns({})->size(); }

  FakeClock clock_;
  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(SubmitRequestsTest, SameIdGetsTheFirstSubmitsRunsAndStoresNothing) {
  absl::StatusOr<v1::SubmitResponse> first =
      coordinator_->Submit(SpecYaml("nightly", 2), "alice", 0, "req-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->replayed());
  ASSERT_EQ(first->run_ids_size(), 2);
  clock_.now_ms += 60'000;
  absl::StatusOr<v1::SubmitResponse> again =
      coordinator_->Submit(SpecYaml("nightly", 2), "alice", 0, "req-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed());
  EXPECT_EQ(again->submission_id(), first->submission_id());
  EXPECT_THAT(again->run_ids(), ElementsAreArray(first->run_ids()));
  EXPECT_EQ(StoredRuns(), 2);
}

TEST_F(SubmitRequestsTest, ReplayIsAnsweredEvenWhenTheQueueIsFullNow) {
  ASSERT_TRUE(coordinator_->Submit(SpecYaml("one"), "alice", 1, "r").ok());
  // A new submit would pass the cap of 1; the retry of the stored one must
  // not be refused by its own run.
  EXPECT_TRUE(absl::IsResourceExhausted(
      coordinator_->Submit(SpecYaml("two"), "alice", 1).status()));
  absl::StatusOr<v1::SubmitResponse> again =
      coordinator_->Submit(SpecYaml("one"), "alice", 1, "r");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed());
  EXPECT_EQ(StoredRuns(), 1);
}

TEST_F(SubmitRequestsTest, SameIdWithAnotherSpecIsRefusedNamingTheId) {
  absl::StatusOr<v1::SubmitResponse> first =
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<v1::SubmitResponse> other =
      coordinator_->Submit(SpecYaml("weekly"), "alice", 0, "req-1");
  ASSERT_TRUE(absl::IsAlreadyExists(other.status())) << other.status();
  EXPECT_THAT(other.status().message(), HasSubstr("request id 'req-1'"));
  EXPECT_THAT(other.status().message(),
              HasSubstr(absl::StrCat("submission ", first->submission_id())));
  EXPECT_EQ(StoredRuns(), 1);
}

TEST_F(SubmitRequestsTest, AnIdOlderThanADayIsForgotten) {
  ASSERT_TRUE(
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1").ok());
  clock_.now_ms += Store::kSubmitRequestRetentionMs - 1;
  EXPECT_TRUE(coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1")
                  ->replayed());
  clock_.now_ms += 1;
  absl::StatusOr<v1::SubmitResponse> later =
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1");
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_FALSE(later->replayed());
  EXPECT_EQ(StoredRuns(), 2);
  // ... and the id now stands for the new submit.
  EXPECT_THAT(
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1")->run_ids(),
      ElementsAreArray(later->run_ids()));
}

TEST_F(SubmitRequestsTest, UsersHaveTheirOwnIds) {
  absl::StatusOr<v1::SubmitResponse> alice =
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "req-1");
  absl::StatusOr<v1::SubmitResponse> bob =
      coordinator_->Submit(SpecYaml("weekly"), "bob", 0, "req-1");
  ASSERT_TRUE(alice.ok()) << alice.status();
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_FALSE(bob->replayed());
  EXPECT_NE(bob->run_ids(0), alice->run_ids(0));
  EXPECT_EQ(StoredRuns(), 2);
}

TEST_F(SubmitRequestsTest, NoIdMeansEverySubmitIsNew) {
  ASSERT_TRUE(coordinator_->Submit(SpecYaml("nightly"), "alice").ok());
  ASSERT_TRUE(coordinator_->Submit(SpecYaml("nightly"), "alice").ok());
  EXPECT_EQ(StoredRuns(), 2);
}

TEST_F(SubmitRequestsTest, ASuiteIsReplayedWhole) {
  const std::string suite =
      "---\n" + SpecYaml("first", 2) + "---\n" + SpecYaml("second");
  absl::StatusOr<v1::SubmitResponse> first =
      coordinator_->Submit(suite, "alice", 0, "suite-1");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<v1::SubmitResponse> again =
      coordinator_->Submit(suite, "alice", 0, "suite-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed());
  EXPECT_EQ(again->suite(), first->suite());
  EXPECT_THAT(again->submission_ids(),
              ElementsAreArray(first->submission_ids()));
  EXPECT_THAT(again->run_ids(), ElementsAreArray(first->run_ids()));
  EXPECT_EQ(StoredRuns(), 3);
}

TEST_F(SubmitRequestsTest, ARefusedSubmitLeavesItsIdFree) {
  EXPECT_FALSE(
      coordinator_->Submit(SpecYaml("bad") + "colour: blue\n", "alice", 0, "r")
          .ok());
  absl::StatusOr<v1::SubmitResponse> fixed =
      coordinator_->Submit(SpecYaml("good"), "alice", 0, "r");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_FALSE(fixed->replayed());
}

TEST_F(SubmitRequestsTest, AMalformedIdIsRefused) {
  absl::StatusOr<v1::SubmitResponse> refused =
      coordinator_->Submit(SpecYaml("nightly"), "alice", 0, "two words");
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_EQ(StoredRuns(), 0);
}

}  // namespace
}  // namespace hpcai500
