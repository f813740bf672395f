// The change points of one run series (methodology/series_changes.h): the
// metrics of good runs, each change's run, direction and attribution, and
// the same answer whole or appended run by run.
#include "methodology/series_changes.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

// A good run `id` of 1000 samples in `seconds` on LibTorch `libtorch`.
v1::Run GoodRun(int64_t id, double seconds, const std::string& libtorch) {
  v1::Run run;
  run.set_id(id);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.set_finished_ms(id * 1000);
  run.mutable_spec()->set_name("nightly");
  run.mutable_score()->set_samples(1000);
  run.mutable_score()->set_train_seconds(seconds);
  run.mutable_score()->set_valid_flops(1e12 / seconds);
  run.mutable_score()->set_quality(0.9);
  auto& fields = *run.mutable_fingerprint()->mutable_fields();
  fields["libtorch"] = libtorch;
  fields["nodes"] = "a,b";
  return run;
}

// 30 runs at 10 s then 20 at 11 s (10% slower) after a LibTorch upgrade,
// with a little noise that repeats.
std::vector<v1::Run> History() {
  std::vector<v1::Run> runs;
  const double noise[] = {0.02, -0.03, 0.01, 0.0, -0.01, 0.03, -0.02};
  for (int i = 0; i < 50; ++i) {
    runs.push_back(GoodRun(100 + i, (i < 30 ? 10 : 11) + noise[i % 7],
                           i < 30 ? "2.11.0" : "2.12.0"));
  }
  return runs;
}

const v1::ChangePoint* Find(const std::vector<v1::ChangePoint>& changes,
                            const std::string& metric) {
  for (const v1::ChangePoint& change : changes) {
    if (change.metric() == metric) return &change;
  }
  return nullptr;
}

TEST(SeriesChangeHistory, FindsTheSlowdownAtItsFirstRunAndNamesTheUpgrade) {
  SeriesChangeHistory history("key", "nightly", ChangePointOptions());
  history.Reset(History());
  const std::vector<v1::ChangePoint> changes = history.Changes();
  const v1::ChangePoint* throughput = Find(changes, "throughput");
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->run_id(), 130);
  EXPECT_EQ(throughput->previous_run_id(), 129);
  EXPECT_EQ(throughput->finished_ms(), 130'000);
  EXPECT_TRUE(throughput->regression());
  EXPECT_FALSE(throughput->gradual());
  EXPECT_NEAR(throughput->change_pct(), -9.1, 0.5);
  EXPECT_LT(throughput->change_pct_low(), throughput->change_pct());
  EXPECT_EQ(throughput->runs_before(), 30);
  EXPECT_EQ(throughput->runs_after(), 20);
  EXPECT_EQ(throughput->series(), "key");
  EXPECT_EQ(throughput->name(), "nightly");
  ASSERT_EQ(throughput->changed_fields_size(), 1);
  EXPECT_EQ(throughput->changed_fields(0), "libtorch");
  EXPECT_EQ(throughput->attribution(),
            "libtorch 2.11.0 -> 2.12.0 in every run after; node set "
            "unchanged");
  // Valid FLOPS moved with it; quality never moved; no energy measured.
  EXPECT_NE(Find(changes, "valid_flops"), nullptr);
  EXPECT_EQ(Find(changes, "quality"), nullptr);
  EXPECT_EQ(Find(changes, "energy"), nullptr);
}

TEST(SeriesChangeHistory, AddRevealsTheChangeOnceAsRunsEnd) {
  SeriesChangeHistory history("key", "nightly", ChangePointOptions());
  std::vector<int64_t> revealed_by;
  for (const v1::Run& run : History()) {
    for (const v1::ChangePoint& change : history.Add(run)) {
      if (change.metric() == "throughput") revealed_by.push_back(run.id());
    }
  }
  ASSERT_EQ(revealed_by.size(), 1u);
  EXPECT_GT(revealed_by[0], 130);
  EXPECT_LT(revealed_by[0], 140);
  const std::vector<v1::ChangePoint> changes = history.Changes();
  const v1::ChangePoint* throughput = Find(changes, "throughput");
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->run_id(), 130);
  EXPECT_THAT(throughput->attribution(), HasSubstr("libtorch"));
  EXPECT_EQ(history.RunIds().size(), 50u);
}

TEST(SeriesChangeHistory, RunsWithoutFingerprintsSayNothingToCompare) {
  std::vector<v1::Run> runs = History();
  for (v1::Run& run : runs) run.clear_fingerprint();
  SeriesChangeHistory history("key", "nightly", ChangePointOptions());
  history.Reset(runs);
  const std::vector<v1::ChangePoint> changes = history.Changes();
  const v1::ChangePoint* throughput = Find(changes, "throughput");
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->attribution(), "no fingerprints to compare");
}

TEST(IsChangeHistoryRun, TakesOnlyScoredSucceededValidRuns) {
  v1::Run run = GoodRun(1, 10, "x");
  EXPECT_TRUE(IsChangeHistoryRun(run));
  run.set_invalidated_by("admin");
  EXPECT_FALSE(IsChangeHistoryRun(run));
  run = GoodRun(1, 10, "x");
  run.set_state(v1::RUN_STATE_FAILED);
  EXPECT_FALSE(IsChangeHistoryRun(run));
  run = GoodRun(1, 10, "x");
  run.clear_score();
  EXPECT_FALSE(IsChangeHistoryRun(run));
}

}  // namespace
}  // namespace hpcai500
