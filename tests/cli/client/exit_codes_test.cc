#include "cli/client/exit_codes.h"

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(ExitCodeForRun, SucceededWithoutScoreIsAFailure) {
  v1::Run run;
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(ExitCodeForRun(run), kExitFailed);
  run.mutable_score()->set_reached_target(true);
  EXPECT_EQ(ExitCodeForRun(run), kExitOk);
}

}  // namespace
}  // namespace hpcai500
