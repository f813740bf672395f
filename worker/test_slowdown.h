// A slowdown on purpose, for tests only: $HPCAI500_TEST_SLOW_STEP_MS makes
// every training step sleep that many milliseconds, so that a regression
// test (tests/integration/regress_test.cc) has a real drop in throughput to
// find. No flag and no spec field reaches it: the agent passes the variable
// on only when its operator names it with --env (agent/worker_env.h), so a
// submitter cannot slow a ranked run. std-only.
//
// Thread-safe: pure function.
#ifndef HPCAI500_WORKER_TEST_SLOWDOWN_H_
#define HPCAI500_WORKER_TEST_SLOWDOWN_H_

#include <chrono>

#include "worker/flags.h"

namespace hpcai500::worker {

inline constexpr char kTestSlowStepVar[] = "HPCAI500_TEST_SLOW_STEP_MS";

// The sleep per step $HPCAI500_TEST_SLOW_STEP_MS asks for (0 when unset).
// Throws std::invalid_argument naming the variable when it is not an
// integer in [0, 10000].
std::chrono::milliseconds TestStepSlowdown(const EnvLookup& env);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TEST_SLOWDOWN_H_
