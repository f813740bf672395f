// The Extreme Weather reader: one year's HDF5 file (EwaFile), several years
// read as one set (EwaDataset), and the per-channel normalisation statistics
// of the training years. The layout is in worker/data/ewa_layout.h.
//
// Train and validation years: a config names a data folder and two lists of
// years; EwaFilesForYears maps them to <dir>/climo_YYYY.h5 (an explicit list
// of files works as well: EwaDataset takes paths).
//
// Reading needs HDF5 (HPCAI500_HAVE_HDF5); without it every
// function that reads a file throws "built without HDF5 ...".
#ifndef HPCAI500_WORKER_DATA_EWA_FILE_H_
#define HPCAI500_WORKER_DATA_EWA_FILE_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker/data/ewa_layout.h"

namespace hpcai500::worker {

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

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_EWA_FILE_H_
