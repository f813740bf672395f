#include "common/run_state.h"

#include "common/worker_lease.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(RunStateName, NamesEveryState) {
  EXPECT_EQ(RunStateName(v1::RUN_STATE_QUEUED), "queued");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_STARTING), "starting");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_RUNNING), "running");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_SUCCEEDED), "succeeded");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_FAILED), "failed");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_CANCELLED), "cancelled");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_ABORTED), "aborted");
  EXPECT_EQ(RunStateName(v1::RUN_STATE_UNSPECIFIED), "unknown");
}

TEST(ParseRunStateName, InvertsRunStateNameForEveryState) {
  for (v1::RunState state :
       {v1::RUN_STATE_QUEUED, v1::RUN_STATE_STARTING, v1::RUN_STATE_RUNNING,
        v1::RUN_STATE_SUCCEEDED, v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED,
        v1::RUN_STATE_ABORTED}) {
    absl::StatusOr<v1::RunState> parsed =
        ParseRunStateName(RunStateName(state));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, state);
  }
}

TEST(ParseRunStateName, RefusesOtherNamesListingTheKnownOnes) {
  for (const char* bad :
       {"unknown", "RUNNING", "RUN_STATE_RUNNING", "", "done"}) {
    absl::StatusOr<v1::RunState> parsed = ParseRunStateName(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(
                  "(expected: queued, starting, running, succeeded, failed, "
                  "cancelled, aborted)"),
              absl::string_view::npos)
        << parsed.status();
  }
}

TEST(IsTerminal, AnAbortedRunEndedLikeACancelledOne) {
  EXPECT_TRUE(IsTerminal(v1::RUN_STATE_ABORTED));
  EXPECT_TRUE(IsTerminal(v1::RUN_STATE_CANCELLED));
  EXPECT_FALSE(IsTerminal(v1::RUN_STATE_RUNNING));
}

TEST(IsLostWorker, AWorkerFencedByItsLeaseIsLostNotFailed) {
  v1::WorkerExited exit;
  exit.set_exit_code(1);
  EXPECT_FALSE(IsLostWorker(exit));  // its own training failed
  exit.set_exit_code(kLeaseExpiredExitCode);
  EXPECT_TRUE(IsLostWorker(exit));
  exit.set_exit_code(-1);
  exit.set_error(kWorkerLostError);
  EXPECT_TRUE(IsLostWorker(exit));
}

}  // namespace
}  // namespace hpcai500
