#include "common/vocabulary.h"

namespace hpcai500 {

bool IsMixedPrecision(Precision precision) {
  return precision != Precision::kFp32;
}

}  // namespace hpcai500
