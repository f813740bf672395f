// The global batch of a run: see global_batch.h.
#include "methodology/global_batch.h"

#include <algorithm>
#include <optional>

#include "common/vocabulary.h"

namespace hpcai500 {

int64_t GlobalBatch(const v1::RunSpec& spec, const Registry& registry) {
  int64_t per_rank = spec.batch_size();
  if (per_rank <= 0) {
    const ConfigInfo* config =
        registry.FindConfig(spec.workload(), spec.config());
    std::optional<Precision> precision = Parse<Precision>(spec.precision());
    per_rank =
        config == nullptr
            ? 0
            : DefaultBatchSize(*config, precision.value_or(Precision::kFp32));
  }
  return per_rank * std::max(1, spec.nodes()) *
         std::max(1, spec.ranks_per_node());
}

}  // namespace hpcai500
