// The Extreme Weather dataset (Racah et al. 2017,
// extremeweatherdataset.github.io) in its own layout, and a generator of
// synthetic files in that layout.
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
// Train and validation years: a config names a data folder and two lists of
// years; EwaFilesForYears maps them to <dir>/climo_YYYY.h5 (an explicit list
// of files works as well: EwaDataset takes paths).
//
// Reading and writing need HDF5 (HPCAI500_HAVE_HDF5); without it every
// function that touches a file throws "built without HDF5 ...".
#ifndef HPCAI500_WORKER_EWA_DATA_H_
#define HPCAI500_WORKER_EWA_DATA_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

enum EwaClass : int64_t {
  kTropicalDepression = 0,
  kTropicalCyclone = 1,
  kExtratropicalCyclone = 2,
  kAtmosphericRiver = 3
};

// One image and its objects.
struct EwaSample {
  torch::Tensor image;   // float [16, H, W], raw or normalised (see Read)
  torch::Tensor boxes;   // float [K, 4]: ymin, xmin, ymax, xmax in pixels
  torch::Tensor labels;  // int64 [K], in [0, 4)
};

// Per-channel mean and standard deviation.
struct EwaChannelStats {
  std::array<double, kEwaChannels> mean{};
  std::array<double, kEwaChannels> std{};
};

// One year's file, opened read-only. Construction checks that `images` is a
// float (N, 16, H, W) dataset and `boxes` a numeric (N, 15, 5) one.
// Thread-safe: all HDF5 calls of the process are serialised by one mutex
// (Debian's serial HDF5 is not thread-safe), so Read may run on many threads.
class EwaFile {
 public:
  // Throws std::runtime_error naming `path` when it is missing, not HDF5,
  // truncated, or has a wrong dataset, rank, shape or type.
  explicit EwaFile(const std::string& path);
  ~EwaFile();
  EwaFile(const EwaFile&) = delete;
  EwaFile& operator=(const EwaFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }

  // Reads sample `index` (a hyperslab of one image). When `stats` is given
  // the image is normalised channel by channel. Throws std::out_of_range for
  // a bad index; std::runtime_error naming the file and index for a
  // non-finite value, a bad class or an inverted box.
  EwaSample Read(int64_t index, const EwaChannelStats* stats = nullptr) const;

  // Sum and sum of squares per channel over all pixels of all samples (in
  // double), for normalisation statistics; checks every value is finite.
  void AccumulateChannelSums(std::array<double, kEwaChannels>& sum,
                             std::array<double, kEwaChannels>& sum_sq) const;

 private:
  struct Handles;
  // Constant after construction.
  std::string path_;
  int64_t size_ = 0;
  int64_t height_ = 0;
  int64_t width_ = 0;
  std::unique_ptr<Handles> handles_;
};

// Several year files read as one data set, sample i of the concatenation.
// Thread-safe for concurrent Read calls.
class EwaDataset {
 public:
  // Opens every file (errors as EwaFile's); throws std::invalid_argument for
  // an empty list and std::runtime_error when grids differ between files.
  explicit EwaDataset(const std::vector<std::string>& files);

  int64_t size() const { return total_; }
  int64_t height() const { return files_.front()->height(); }
  int64_t width() const { return files_.front()->width(); }
  // Normalises every later Read with `stats`.
  void set_stats(const EwaChannelStats& stats) {
    stats_ = stats;
    has_stats_ = true;
  }
  EwaSample Read(int64_t index) const;
  // "FILE:INDEX" for sample `index`, for warnings.
  std::string Describe(int64_t index) const;

 private:
  // Returns the file holding `index` and the index within it.
  std::pair<const EwaFile*, int64_t> Locate(int64_t index) const;

  // Constant after construction (set_stats is called before any Read).
  std::vector<std::unique_ptr<EwaFile>> files_;
  std::vector<int64_t> offsets_;  // first global index of each file
  int64_t total_ = 0;
  EwaChannelStats stats_;
  bool has_stats_ = false;
};

// <dir>/climo_YYYY.h5 for each year, in the given order. Throws
// std::runtime_error naming the first file that does not exist, and
// std::invalid_argument for an empty list.
std::vector<std::string> EwaFilesForYears(const std::string& dir,
                                          const std::vector<int>& years);

// Per-channel mean and std over all pixels of `files`. Each file's sums are
// cached beside it as FILE.stats (text, written to a temporary and renamed)
// and reused while the cache is at least as new as the file; so a file is
// scanned once whatever year combination uses it. Errors as EwaFile's, and
// std::runtime_error for a channel with zero variance.
EwaChannelStats LoadOrComputeEwaStats(const std::vector<std::string>& files);

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

// `hpcai500-worker make-ewa --out FILE --samples N --height H --width W
// --seed S` (also --flag=value). argv[0] is the subcommand name and is
// skipped. Returns 0 on success, 2 for a usage error, 1 when writing fails;
// messages go to stderr.
int MakeEwaMain(int argc, char** argv);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_EWA_DATA_H_
