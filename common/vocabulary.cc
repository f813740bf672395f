#include "common/vocabulary.h"

namespace hpcai500 {

bool IsMixedPrecision(Precision precision) {
  return precision != Precision::kFp32;
}

int ReferenceBatchSize(const ConfigInfo& config, Precision precision) {
  return IsMixedPrecision(precision) ? 2 * config.batch_size
                                     : config.batch_size;
}

int DefaultBatchSize(const ConfigInfo& config, Precision precision) {
  return config.dataset == "imagenet" ? ReferenceBatchSize(config, precision)
                                      : config.batch_size;
}

}  // namespace hpcai500
