// A slowdown on purpose, for tests only: $HPCAI500_TEST_SLOW_STEP_PCT=P
// makes every training step sleep P% of the time it took, so that a
// regression test (tests/integration/regress_test.cc) has a real drop in
// throughput to find: 100 halves it, however loaded the machine is (a fixed
// sleep would vanish in the noise of a busy machine and dominate an idle
// one). No flag and no spec field reaches it: the agent passes the variable
// on only when its operator names it with --env (agent/worker_env.h), so a
// submitter cannot slow a ranked run. Read once at the start of a run, into
// the trainer's step hooks (worker/train/step_hooks.h). std-only.
//
// Thread-safe: pure function.
#ifndef HPCAI500_WORKER_TEST_SLOWDOWN_H_
#define HPCAI500_WORKER_TEST_SLOWDOWN_H_

#include <string>

#include "worker/flags.h"

namespace hpcai500::worker {

inline constexpr char kTestSlowStepVar[] = "HPCAI500_TEST_SLOW_STEP_PCT";
// With it, $HPCAI500_TEST_SLOW_WHILE_FILE=PATH slows the steps only while
// PATH exists: a fault test keeps a run training through its fault however
// fast the machine, then removes the file so that the run ends soon however
// loaded the machine (a fixed slowdown ran 7 minutes under load).
inline constexpr char kTestSlowWhileVar[] = "HPCAI500_TEST_SLOW_WHILE_FILE";

// The sleep per step, in percent of the step's own time, that
// $HPCAI500_TEST_SLOW_STEP_PCT asks for (0 when unset). Throws
// std::invalid_argument naming the variable when it is not an integer in
// [0, 1000].
int TestStepSlowdownPct(const EnvLookup& env);

// The file $HPCAI500_TEST_SLOW_WHILE_FILE names; "" when unset (the
// slowdown lasts the whole run).
std::string TestSlowdownGate(const EnvLookup& env);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TEST_SLOWDOWN_H_
