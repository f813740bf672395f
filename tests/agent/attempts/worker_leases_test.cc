// WorkerLeases: lease files renewed for the attempts whose ranks run; a
// renewal that cannot be written is not counted.
#include "agent/attempts/worker_leases.h"

#include <filesystem>
#include <string>
#include <vector>

#include "agent/attempts/attempt_layout.h"
#include "common/worker_lease.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

v1::RunningAttempt Running(int64_t run, std::vector<int> ranks,
                           std::vector<int> exited = {}) {
  v1::RunningAttempt attempt;
  attempt.mutable_key()->set_run_id(run);
  attempt.mutable_key()->set_attempt(1);
  for (int rank : ranks) attempt.add_ranks(rank);
  for (int rank : exited) attempt.add_exited_ranks(rank);
  return attempt;
}

class WorkerLeasesTest : public ::testing::Test {
 protected:
  // The lease file of attempt 1 of `run`, its folder created.
  std::string LeaseOf(int64_t run) {
    v1::AttemptKey key;
    key.set_run_id(run);
    key.set_attempt(1);
    const std::string dir = AttemptLayout(dir_.path()).AttemptDir(key);
    std::filesystem::create_directories(dir);
    return AttemptLayout::LeasePath(dir);
  }

  TempDir dir_;
};

TEST_F(WorkerLeasesTest, RenewRewritesOnlyAttemptsWithRunningRanks) {
  WorkerLeases leases(dir_.path());
  const std::string running = LeaseOf(1);
  const std::string ended = LeaseOf(2);
  leases.set_deadline_ms(5000);
  EXPECT_EQ(leases.Renew({Running(1, {0}), Running(2, {}, {0})}), 1);
  EXPECT_EQ(ReadLeaseFile(running), 5000);
  EXPECT_EQ(ReadLeaseFile(ended), std::nullopt);

  leases.set_deadline_ms(9000);
  EXPECT_EQ(leases.Renew({Running(1, {0})}), 1);
  EXPECT_EQ(ReadLeaseFile(running), 9000);
}

TEST_F(WorkerLeasesTest, ARenewalThatCannotBeWrittenIsNotCounted) {
  WorkerLeases leases(dir_.path());
  leases.set_deadline_ms(5000);
  // Attempt 3's folder is gone: nothing to renew there.
  EXPECT_EQ(leases.Renew({Running(3, {0})}), 0);
}

}  // namespace
}  // namespace hpcai500::agent
