// The Extreme Weather dataset (Racah et al. 2017,
// extremeweatherdataset.github.io): its on-disk layout, shared by the reader
// (worker/data/ewa_file.h) and the generator (worker/data/ewa_generator.h).
//
// Layout: one HDF5 file per year, named climo_YYYY.h5, holding
// - `images`: float32 (N, 16, H, W), the 16 CAM5 variables in kEwaVariables
//   order; the full grid is 768 x 1152 (latitude x longitude).
// - `boxes`: (N, 15, 5), up to 15 rows per image of
//   [ymin, xmin, ymax, xmax, class] in pixels (y = row, x = column, as
//   continuous coordinates: pixel r spans [r, r + 1)), the dataset README's
//   order; class 0 tropical depression, 1 tropical cyclone,
//   2 extratropical cyclone, 3 atmospheric river. Unused rows are all -1
//   (a row whose class is negative is padding).
// The generator puts the South Pole at row 0 (latitude grows with the row)
// and longitude 0 at column 0, growing eastward.
//
// Thread-safe: constants only. No LibTorch or HDF5 here.
#ifndef HPCAI500_WORKER_DATA_EWA_LAYOUT_H_
#define HPCAI500_WORKER_DATA_EWA_LAYOUT_H_

#include <array>
#include <cstdint>

namespace hpcai500::worker {

inline constexpr int64_t kEwaChannels = 16;
inline constexpr int64_t kEwaMaxBoxes = 15;
inline constexpr int64_t kEwaBoxFields = 5;
inline constexpr int64_t kEwaNumClasses = 4;
inline constexpr int64_t kEwaFullHeight = 768;
inline constexpr int64_t kEwaFullWidth = 1152;

// Channel names in the dataset's order.
inline constexpr std::array<const char*, kEwaChannels> kEwaVariables = {
    "PRECT", "PS",   "PSL",  "QREFHT", "T200", "T500", "TMQ",  "TREFHT",
    "TS",    "U850", "UBOT", "V850",   "VBOT", "Z100", "Z200", "ZBOT"};

enum EwaChannel : int {
  kPrect = 0,
  kPs,
  kPsl,
  kQrefht,
  kT200,
  kT500,
  kTmq,
  kTrefht,
  kTs,
  kU850,
  kUbot,
  kV850,
  kVbot,
  kZ100,
  kZ200,
  kZbot
};

// Class names in label order, for per-class AP.
inline constexpr std::array<const char*, kEwaNumClasses> kEwaClassNames = {
    "tropical_depression", "tropical_cyclone", "extratropical_cyclone",
    "atmospheric_river"};

enum EwaClass : int64_t {
  kTropicalDepression = 0,
  kTropicalCyclone = 1,
  kExtratropicalCyclone = 2,
  kAtmosphericRiver = 3
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_EWA_LAYOUT_H_
