// Registry::Parse (methodology/registry.h) on any text: it refuses, naming why,
// or returns a registry keeping the rules Parse checks (every config of a
// declared workload, found by its names; epochs and batch_size positive;
// target positive, or 0 in workload noop).
#include <string>

#include "methodology/registry.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hpcai500::FuzzCheck;
  std::string error;
  std::optional<hpcai500::Registry> registry =
      hpcai500::Registry::Parse(hpcai500::FuzzText(data, size), &error);
  if (!registry) {
    FuzzCheck(!error.empty(), "a refused registry says why");
    return 0;
  }
  for (const hpcai500::ConfigInfo& config : registry->configs()) {
    const std::string name = config.workload + "/" + config.name;
    FuzzCheck(registry->FindWorkload(config.workload) != nullptr,
              "a config's workload is declared", name);
    FuzzCheck(registry->FindConfig(config.workload, config.name) == &config,
              "FindConfig finds each config", name);
    FuzzCheck(config.epochs > 0 && config.batch_size > 0,
              "epochs and batch_size are positive", name);
    FuzzCheck(config.workload == hpcai500::kNoopWorkload ? config.target == 0
                                                         : config.target > 0,
              "target is positive (0 in workload noop)", name);
  }
  return 0;
}
