#include "worker/train/step_hooks.h"

#include <filesystem>
#include <string>
#include <thread>
#include <utility>

#include "worker/test_slowdown.h"
#include "worker/train/precision.h"
#include "worker/train/test_warnings.h"

namespace hpcai500::worker {
namespace {

// The hooks of the test-only variables: warnings in the first steps of each
// epoch, and each step slowed by `slowdown_pct` percent of its own time
// while `slowdown_gate` exists (always when it is empty).
class EnvStepHooks final : public StepHooks {
 public:
  EnvStepHooks(bool warn, int slowdown_pct, std::string slowdown_gate)
      : warn_(warn),
        slowdown_pct_(slowdown_pct),
        slowdown_gate_(std::move(slowdown_gate)) {}

  void BeforeForward(const torch::Device& device, Precision precision,
                     int epoch, int64_t step) override {
    if (!warn_ || step >= kTestWarningSteps) return;
    AutocastScope autocast(precision, device);
    RaiseTestWarnings(device, epoch, step);
  }

  void AfterStep(std::chrono::steady_clock::time_point step_start) override {
    if (slowdown_pct_ > 0 &&
        (slowdown_gate_.empty() || std::filesystem::exists(slowdown_gate_))) {
      std::this_thread::sleep_for(
          (std::chrono::steady_clock::now() - step_start) * slowdown_pct_ /
          100);
    }
  }

 private:
  const bool warn_;
  const int slowdown_pct_;
  const std::string slowdown_gate_;
};

}  // namespace

std::unique_ptr<StepHooks> StepHooksFromEnv(const EnvLookup& env) {
  const bool warn = TestTorchWarningsRequested(env);
  const int slowdown_pct = TestStepSlowdownPct(env);
  if (!warn && slowdown_pct == 0) return std::make_unique<StepHooks>();
  return std::make_unique<EnvStepHooks>(warn, slowdown_pct,
                                        TestSlowdownGate(env));
}

}  // namespace hpcai500::worker
