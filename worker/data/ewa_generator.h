// A generator of synthetic Extreme Weather files in the dataset's layout
// (worker/data/ewa_layout.h), for smoke runs and tests at a reduced grid.
// Writing needs HDF5 (HPCAI500_HAVE_HDF5); without it the writer throws
// "built without HDF5 ...".
//
// Thread-safe: the writer holds the process's HDF5 mutex.
#ifndef HPCAI500_WORKER_DATA_EWA_GENERATOR_H_
#define HPCAI500_WORKER_DATA_EWA_GENERATOR_H_

#include <cstdint>
#include <string>

#include "worker/data/ewa_layout.h"

namespace hpcai500::worker {

// Synthetic data: a smooth latitude-dependent background with planetary
// waves and noise, cyclones (pressure minima with cyclonic wind, warm core,
// moisture and rain; TD vs TC by intensity in the tropics, larger and weaker
// ETCs at mid-latitudes) and atmospheric rivers (long narrow poleward-eastward
// bands of water vapour and rain), each with its box.
struct EwaGeneratorOptions {
  std::string out;
  int64_t samples = 64;
  int64_t height = 96;
  int64_t width = 144;
  uint64_t seed = 1;
};

// Writes `options.out` in the dataset's layout. The same options give the
// same bytes (no timestamps, own random draws). Throws std::invalid_argument
// for a grid under 32 x 48 or no samples; std::runtime_error when the file
// cannot be written.
void WriteSyntheticEwaFile(const EwaGeneratorOptions& options);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_EWA_GENERATOR_H_
