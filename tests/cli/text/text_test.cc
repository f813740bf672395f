// The formatters of what the commands print, without a coordinator:
// cli/text/run_text.h, cli/text/cluster_text.h and cli/text/leaderboard_text.h.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/text/cluster_text.h"
#include "cli/text/leaderboard_text.h"
#include "cli/text/run_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Run ScoredRun() {
  v1::Run run;
  run.set_id(4);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  v1::Score* score = run.mutable_score();
  score->set_quality(0.9123);
  score->set_target(0.9);
  score->set_reached_target(true);
  score->set_flops(2e12);
  score->set_valid_flops(1.234e12);
  score->set_exponent(5);
  return run;
}

TEST(RunText, ResultIsTheStateThenTheScore) {
  EXPECT_EQ(FormatRunResult(ScoredRun()),
            "run 4 succeeded\n"
            "  quality      0.9123 / 0.9000 (reached)\n"
            "  FLOPS        2.00 TFLOPS\n"
            "  Valid FLOPS  1.23 TFLOPS (n = 5; before the leaderboard's "
            "convergence check)\n");
  v1::Run failed;
  failed.set_id(5);
  failed.set_state(v1::RUN_STATE_FAILED);
  failed.set_error("rank 1 exited 134");
  EXPECT_EQ(FormatRunResult(failed), "run 5 failed: rank 1 exited 134\n");
}

TEST(RunText, SummaryShowsEpochsAndScoreOnlyWhenThereAreAny) {
  v1::Run run = ScoredRun();
  run.mutable_spec()->set_name("fmnist");
  const std::string shown = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(shown, HasSubstr("run 4 (submission 0, repetition 0): "
                               "succeeded\n  name         fmnist\n"));
  EXPECT_THAT(shown, HasSubstr("\nscore\n  quality      0.9123"));
  EXPECT_THAT(shown, Not(HasSubstr("samples/s")));
  run.clear_score();
  run.add_epochs()->set_epoch(1);
  const std::string running = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(running, HasSubstr("samples/s"));
  EXPECT_THAT(running, Not(HasSubstr("\nscore\n")));
}

TEST(RunText, SummaryShowsTheFingerprintButTheSpecFields) {
  v1::Run run = ScoredRun();
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              Not(HasSubstr("fingerprint")));
  auto& fields = *run.mutable_fingerprint()->mutable_fields();
  fields["libtorch"] = "2.12.0";
  fields["nodes"] = "a,b";
  fields["spec.precision"] = "bf16";
  const std::string shown = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(shown, HasSubstr("\nfingerprint\nfield     value\nlibtorch  "
                               "2.12.0\nnodes     a,b\n"));
  EXPECT_THAT(shown, Not(HasSubstr("spec.precision")));
}

TEST(RunText, SummaryNamesTheFastPathsOnlyWhenAnyIsOn) {
  v1::Run run = ScoredRun();
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              Not(HasSubstr("fast paths")));
  run.mutable_spec()->set_fused_bn(true);
  run.mutable_spec()->set_gpu_decode(true);
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              HasSubstr("\n  fast paths   fused_bn, gpu_decode\n  seed "));
}

TEST(RunText, SummaryShowsTheForecastAndTheEarlyAbortRule) {
  v1::Run run;
  run.set_id(6);
  run.set_state(v1::RUN_STATE_RUNNING);
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              HasSubstr("  forecast     not enough epochs yet\n"));
  run.mutable_spec()->set_abort_if_hopeless(0.1);
  run.mutable_spec()->set_min_epochs(5);
  v1::Forecast* forecast = run.mutable_forecast();
  forecast->set_target(0.763);
  forecast->set_reach_epoch(71);
  forecast->set_probability(0.8);
  const std::string shown = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(shown, HasSubstr("  early abort  below 10% chance, after "
                               "epoch 5\n"));
  EXPECT_THAT(shown, HasSubstr("  forecast     reaches 0.763 by epoch 71, "
                               "80% likely"));
  run.set_state(v1::RUN_STATE_ABORTED);
  forecast->set_reach_epoch(0);
  forecast->set_probability(0.04);
  forecast->set_node_hours_saved(3.5);
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              HasSubstr("unlikely to reach 0.763 (4%)"));
  EXPECT_THAT(FormatRunSummary(run, absl::UTCTimeZone()),
              HasSubstr("3.5 node-hours saved"));
}

TEST(RunText, ActionLinesNameTheRunAndWhatBecameOfIt) {
  v1::Run run;
  run.set_id(9);
  run.set_state(v1::RUN_STATE_QUEUED);
  run.set_held_by("alice");
  EXPECT_EQ(FormatHeld(9, /*held=*/true, run),
            "run 9: held by alice (queued)\n");
  EXPECT_EQ(FormatHeld(9, /*held=*/false, run), "run 9: released (queued)\n");
  EXPECT_EQ(FormatRunState(9, v1::RUN_STATE_CANCELLED), "run 9: cancelled\n");
}

TEST(ClusterText, ReasonColumnOnlyWhenANodeHasAReason) {
  v1::ListNodesResponse nodes;
  v1::Node* node = nodes.add_nodes();
  node->set_name("cpu-1");
  node->set_state("idle");
  (*node->mutable_labels())["zone"] = "b";
  (*node->mutable_labels())["arch"] = "x86";
  std::string table = FormatNodes(nodes, absl::UTCTimeZone());
  EXPECT_THAT(table, Not(HasSubstr("reason")));
  EXPECT_THAT(table, HasSubstr("arch=x86,zone=b\n"));
  node->set_state("drained");
  node->set_state_reason("fan replaced");
  table = FormatNodes(nodes, absl::UTCTimeZone());
  EXPECT_THAT(table, HasSubstr("labels           reason\n"));
  EXPECT_THAT(table, HasSubstr("arch=x86,zone=b  fan replaced\n"));
  EXPECT_EQ(FormatDrained(*node), "node cpu-1: drained (fan replaced)\n");
}

// A stored free text with a newline (and an ESC) cannot print a line of
// its own: every place that shows one prints it escaped.
constexpr char kForged[] = "disk\nI 2026-12-04 hpcai500d forged\x1b[2J";
constexpr char kEscaped[] = "disk\\nI 2026-12-04 hpcai500d forged\\x1b[2J";

// Whether a line of `text` starts with the forged line's text.
bool HasForgedLine(const std::string& text) {
  return text.find("\nI 2026-12-04") != std::string::npos ||
         text.find('\x1b') != std::string::npos;
}

TEST(ClusterText, ReasonsPrintOnTheirOwnLineEscaped) {
  v1::ListNodesResponse nodes;
  v1::Node* node = nodes.add_nodes();
  node->set_name("gpu-1");
  node->set_state("drained");
  node->set_state_reason(kForged);
  nodes.mutable_maintenance()->set_until_ms(1'700'000'000'000);
  nodes.mutable_maintenance()->set_reason(kForged);
  nodes.mutable_maintenance()->set_started_by("root");
  for (const std::string& text :
       {FormatNodes(nodes, absl::UTCTimeZone()),
        FormatMaintenance(nodes.maintenance(), absl::UTCTimeZone()),
        FormatDrained(*node)}) {
    EXPECT_FALSE(HasForgedLine(text)) << text;
    EXPECT_THAT(text, HasSubstr(kEscaped));
  }
  v1::ListAuditResponse audit;
  v1::AuditEntry* entry = audit.add_entries();
  entry->set_action("drain");
  entry->set_detail(kForged);
  const std::string audited = FormatAudit(audit, absl::UTCTimeZone());
  EXPECT_FALSE(HasForgedLine(audited)) << audited;
  EXPECT_THAT(audited, HasSubstr(kEscaped));
}

TEST(RunText, InvalidationReasonPrintsEscaped) {
  v1::Run run = ScoredRun();
  run.set_invalidated_by("root");
  run.set_invalidation_reason(kForged);
  run.set_reason(kForged);
  const std::string shown = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_FALSE(HasForgedLine(shown)) << shown;
  EXPECT_THAT(shown, HasSubstr("invalidated  by root at "));
  EXPECT_THAT(shown, HasSubstr(kEscaped));
}

TEST(RunText, AnErrorKeepsItsLinesIndentedUnderItsLabelAndEscapesTheRest) {
  v1::Run run = ScoredRun();
  run.set_error("rank 1 exited 134; stderr:\nterminate called\x1b[2J\n");
  const std::string shown = FormatRunSummary(run, absl::UTCTimeZone());
  EXPECT_THAT(shown, HasSubstr("  error        rank 1 exited 134; stderr:\n"
                               "               terminate called\\x1b[2J\n"));
  EXPECT_FALSE(HasForgedLine(shown)) << shown;
  const std::string result = FormatRunResult(run);
  EXPECT_THAT(result, HasSubstr(": rank 1 exited 134; stderr:\n"
                                "  terminate called\\x1b[2J\n"));
  EXPECT_EQ(result.find('\x1b'), std::string::npos) << result;
}

TEST(ClusterText, QueuesMarkTheDefaultAndOneWithoutLabelsTakesEveryNode) {
  v1::ListQueuesResponse queues;
  v1::Queue* queue = queues.add_queues();
  queue->set_name("batch");
  queue->set_is_default(true);
  queue->set_nodes(2);
  queue->set_idle_nodes(1);
  EXPECT_THAT(FormatQueues(queues), HasSubstr("batch*         1/2"));
  EXPECT_THAT(FormatQueues(queues), HasSubstr("(every node)\n"));
}

TEST(LeaderboardText, SaysWhyThereAreNoRowsAndWhichRowsAPageHolds) {
  v1::LeaderboardResponse board;
  EXPECT_EQ(FormatLeaderboard(board, /*offset=*/0), "no results yet\n");
  board.set_total(3);
  EXPECT_EQ(FormatLeaderboard(board, /*offset=*/40),
            "no rows after the first 40 (of 3)\n");
  v1::LeaderboardRow* row = board.add_rows();
  row->set_workload("image_classification");
  row->set_rank(2);
  row->set_ranked(true);
  const std::string page = FormatLeaderboard(board, /*offset=*/1);
  EXPECT_THAT(page, HasSubstr("\n   2  "));
  EXPECT_THAT(page, Not(HasSubstr("image_classification\n")));
  EXPECT_THAT(page, HasSubstr("\nrows 2-2 of 3 (--offset, --limit)\n"));
}

// The demo printed a run's Valid FLOPS and then its row's, 1.08 times
// smaller, without a word on why: a row divided by the convergence check's
// factor brings the footnote that says so.
TEST(LeaderboardText, NormalisedRowsBringTheConvergenceCheckFootnote) {
  v1::LeaderboardResponse board;
  v1::LeaderboardRow* row = board.add_rows();
  row->set_valid_flops(107.34e9);
  row->set_valid_flops_unnormalized(116.29e9);
  row->mutable_convergence()->set_verdict("pass");
  row->mutable_convergence()->set_factor(1);
  const std::string footnote =
      "\n/F: Valid FLOPS normalised by the convergence check: the submission "
      "converged F times faster than the reference (in epochs to target), so "
      "its runs' Valid FLOPS is divided by F\n";
  EXPECT_THAT(FormatLeaderboard(board, /*offset=*/0),
              Not(HasSubstr("normalised")));
  row->mutable_convergence()->set_verdict("normalized");
  row->mutable_convergence()->set_factor(1.0834);
  const std::string page = FormatLeaderboard(board, /*offset=*/0);
  EXPECT_THAT(page, HasSubstr("107.34 GFLOPS"));
  EXPECT_THAT(page, HasSubstr("normalized /1.08"));
  EXPECT_THAT(page, HasSubstr(footnote));
}

}  // namespace
}  // namespace hpcai500
