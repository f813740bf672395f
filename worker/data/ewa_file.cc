#include "worker/data/ewa_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>

#include "worker/data/internal/hdf5.h"

namespace hpcai500::worker {
namespace {

constexpr const char* kStatsMagic = "hpcai500-ewa-stats v1";

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Modification time in nanoseconds, or -1 when the file is missing.
int64_t MtimeNs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
         st.st_mtim.tv_nsec;
}

// Checks one box row read from `path`; returns false for a padding row.
[[maybe_unused]] bool ValidBoxRow(const float* row, const std::string& path,
                                  int64_t index) {
  if (row[4] < 0) return false;
  const float cls = row[4];
  if (!std::isfinite(cls) || cls != std::floor(cls) || cls >= kEwaNumClasses) {
    internal::FailEwaFile(path, "sample " + std::to_string(index) +
                                    " has box class " + std::to_string(cls) +
                                    ", expected 0..3 or -1 for padding");
  }
  for (int k = 0; k < 4; ++k) {
    if (!std::isfinite(row[k])) {
      internal::FailEwaFile(path, "sample " + std::to_string(index) +
                                      " has a non-finite box coordinate");
    }
  }
  if (row[2] < row[0] || row[3] < row[1]) {
    internal::FailEwaFile(
        path, "sample " + std::to_string(index) +
                  " has an inverted box (ymin, xmin, ymax, xmax = " +
                  std::to_string(row[0]) + ", " + std::to_string(row[1]) +
                  ", " + std::to_string(row[2]) + ", " +
                  std::to_string(row[3]) + ")");
  }
  return true;
}

#ifdef HPCAI500_HAVE_HDF5
std::vector<hsize_t> DatasetDims(hid_t dataset) {
  internal::H5Handle space(H5Dget_space(dataset), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(rank > 0 ? rank : 0);
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

std::string DimsString(const std::vector<hsize_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return s + ")";
}

// Reads the hyperslab [start, start + count) of `dataset` as native floats.
bool ReadFloatSlab(hid_t dataset, const std::vector<hsize_t>& start,
                   const std::vector<hsize_t>& count, float* out) {
  internal::H5Handle file_space(H5Dget_space(dataset), H5Sclose);
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(),
                          nullptr, count.data(), nullptr) < 0) {
    return false;
  }
  internal::H5Handle mem_space(
      H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
      H5Sclose);
  return H5Dread(dataset, H5T_NATIVE_FLOAT, mem_space.get(), file_space.get(),
                 H5P_DEFAULT, out) >= 0;
}
#endif  // HPCAI500_HAVE_HDF5

}  // namespace

// ---------------------------------------------------------------- EwaFile

struct EwaFile::Handles {
#ifdef HPCAI500_HAVE_HDF5
  hid_t file = -1;
  hid_t images = -1;
  hid_t boxes = -1;
  ~Handles() {
    std::lock_guard<std::mutex> lock(internal::Hdf5Mutex());
    if (boxes >= 0) H5Dclose(boxes);
    if (images >= 0) H5Dclose(images);
    if (file >= 0) H5Fclose(file);
  }
#endif
};

EwaFile::EwaFile(const std::string& path)
    : path_(path), handles_(std::make_unique<Handles>()) {
#ifdef HPCAI500_HAVE_HDF5
  if (!FileExists(path)) internal::FailEwaFile(path, "does not exist");
  std::lock_guard<std::mutex> lock(internal::Hdf5Mutex());
  internal::SilenceHdf5Errors();
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    internal::FailEwaFile(
        path, "is not a readable HDF5 file (wrong format or truncated)");
  }
  handles_->file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (handles_->file < 0) {
    internal::FailEwaFile(path,
                          "cannot be opened as HDF5 (truncated or corrupt)");
  }
  for (const char* name : {"images", "boxes"}) {
    if (H5Lexists(handles_->file, name, H5P_DEFAULT) <= 0) {
      internal::FailEwaFile(path, std::string("has no dataset '") + name + "'");
    }
  }
  handles_->images = H5Dopen2(handles_->file, "images", H5P_DEFAULT);
  handles_->boxes = H5Dopen2(handles_->file, "boxes", H5P_DEFAULT);
  if (handles_->images < 0 || handles_->boxes < 0) {
    internal::FailEwaFile(path, "cannot open 'images' or 'boxes'");
  }
  {
    internal::H5Handle type(H5Dget_type(handles_->images), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT) {
      internal::FailEwaFile(path, "'images' must hold floats (float32)");
    }
    internal::H5Handle box_type(H5Dget_type(handles_->boxes), H5Tclose);
    H5T_class_t box_class = H5Tget_class(box_type.get());
    if (box_class != H5T_FLOAT && box_class != H5T_INTEGER) {
      internal::FailEwaFile(path, "'boxes' must hold numbers");
    }
  }
  std::vector<hsize_t> image_dims = DatasetDims(handles_->images);
  std::vector<hsize_t> box_dims = DatasetDims(handles_->boxes);
  if (image_dims.size() != 4 || image_dims[1] != kEwaChannels ||
      image_dims[2] == 0 || image_dims[3] == 0) {
    internal::FailEwaFile(path, "'images' has shape " + DimsString(image_dims) +
                                    ", expected (N, 16, H, W)");
  }
  if (box_dims.size() != 3 || box_dims[0] != image_dims[0] ||
      box_dims[1] != kEwaMaxBoxes || box_dims[2] != kEwaBoxFields) {
    internal::FailEwaFile(path, "'boxes' has shape " + DimsString(box_dims) +
                                    ", expected (" +
                                    std::to_string(image_dims[0]) + ", 15, 5)");
  }
  size_ = image_dims[0];
  height_ = image_dims[2];
  width_ = image_dims[3];
#else
  internal::NoHdf5("reading " + path);
#endif
}

EwaFile::~EwaFile() = default;

EwaSample EwaFile::Read(int64_t index, const EwaChannelStats* stats) const {
  if (index < 0 || index >= size_) {
    throw std::out_of_range("EWA file " + path_ + ": sample " +
                            std::to_string(index) + " out of range [0, " +
                            std::to_string(size_) + ")");
  }
#ifdef HPCAI500_HAVE_HDF5
  torch::Tensor image = torch::empty({kEwaChannels, height_, width_});
  std::array<float, kEwaMaxBoxes * kEwaBoxFields> rows;
  {
    std::lock_guard<std::mutex> lock(internal::Hdf5Mutex());
    const hsize_t i = static_cast<hsize_t>(index);
    if (!ReadFloatSlab(
            handles_->images, {i, 0, 0, 0},
            {1, static_cast<hsize_t>(kEwaChannels),
             static_cast<hsize_t>(height_), static_cast<hsize_t>(width_)},
            image.data_ptr<float>())) {
      internal::FailEwaFile(path_, "cannot read image of sample " +
                                       std::to_string(index) +
                                       " (truncated or corrupt)");
    }
    if (!ReadFloatSlab(handles_->boxes, {i, 0, 0},
                       {1, static_cast<hsize_t>(kEwaMaxBoxes),
                        static_cast<hsize_t>(kEwaBoxFields)},
                       rows.data())) {
      internal::FailEwaFile(
          path_, "cannot read boxes of sample " + std::to_string(index));
    }
  }
  const float* p = image.data_ptr<float>();
  const int64_t plane = height_ * width_;
  for (int64_t c = 0; c < kEwaChannels; ++c) {
    for (int64_t k = 0; k < plane; ++k) {
      if (!std::isfinite(p[c * plane + k])) {
        internal::FailEwaFile(path_, "sample " + std::to_string(index) +
                                         " has a non-finite value in channel " +
                                         kEwaVariables[c] + " at pixel (" +
                                         std::to_string(k / width_) + ", " +
                                         std::to_string(k % width_) + ")");
      }
    }
  }
  if (stats != nullptr) {
    auto mean = torch::empty({kEwaChannels, 1, 1});
    auto inv_std = torch::empty({kEwaChannels, 1, 1});
    for (int64_t c = 0; c < kEwaChannels; ++c) {
      mean[c] = stats->mean[c];
      inv_std[c] = 1.0 / stats->std[c];
    }
    image.sub_(mean).mul_(inv_std);
  }
  std::vector<float> boxes;
  std::vector<int64_t> labels;
  for (int64_t r = 0; r < kEwaMaxBoxes; ++r) {
    const float* row = rows.data() + r * kEwaBoxFields;
    if (!ValidBoxRow(row, path_, index)) continue;
    boxes.insert(boxes.end(), row, row + 4);
    labels.push_back(static_cast<int64_t>(row[4]));
  }
  const int64_t k = labels.size();
  EwaSample sample;
  sample.image = image;
  sample.boxes = torch::from_blob(boxes.data(), {k, 4}).clone();
  sample.labels = torch::from_blob(labels.data(), {k}, torch::kInt64).clone();
  return sample;
#else
  (void)stats;
  internal::NoHdf5("reading " + path_);
#endif
}

void EwaFile::AccumulateChannelSums(
    std::array<double, kEwaChannels>& sum,
    std::array<double, kEwaChannels>& sum_sq) const {
  for (int64_t i = 0; i < size_; ++i) {
    EwaSample s = Read(i);  // checks every value is finite
    const float* p = s.image.data_ptr<float>();
    const int64_t plane = height_ * width_;
    for (int64_t c = 0; c < kEwaChannels; ++c) {
      double a = 0, b = 0;
      for (int64_t k = 0; k < plane; ++k) {
        const double v = p[c * plane + k];
        a += v;
        b += v * v;
      }
      sum[c] += a;
      sum_sq[c] += b;
    }
  }
}

// ------------------------------------------------------------- EwaDataset

EwaDataset::EwaDataset(const std::vector<std::string>& files) {
  if (files.empty()) {
    throw std::invalid_argument("EwaDataset: no files given");
  }
  for (const std::string& f : files) {
    files_.push_back(std::make_unique<EwaFile>(f));
    const EwaFile& last = *files_.back();
    if (last.height() != height() || last.width() != width()) {
      throw std::runtime_error(
          "EWA file " + f + ": grid " + std::to_string(last.height()) + "x" +
          std::to_string(last.width()) + " differs from " + files.front() +
          "'s " + std::to_string(height()) + "x" + std::to_string(width()));
    }
    offsets_.push_back(total_);
    total_ += last.size();
  }
}

std::pair<const EwaFile*, int64_t> EwaDataset::Locate(int64_t index) const {
  if (index < 0 || index >= total_) {
    throw std::out_of_range("EwaDataset: sample " + std::to_string(index) +
                            " out of range [0, " + std::to_string(total_) +
                            ")");
  }
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
  const size_t f = static_cast<size_t>(it - offsets_.begin()) - 1;
  return {files_[f].get(), index - offsets_[f]};
}

EwaSample EwaDataset::Read(int64_t index) const {
  auto [file, local] = Locate(index);
  return file->Read(local, has_stats_ ? &stats_ : nullptr);
}

std::string EwaDataset::Describe(int64_t index) const {
  auto [file, local] = Locate(index);
  return file->path() + ":" + std::to_string(local);
}

std::vector<std::string> EwaFilesForYears(const std::string& dir,
                                          const std::vector<int>& years) {
  if (years.empty()) {
    throw std::invalid_argument("EWA: no years given for " + dir);
  }
  std::vector<std::string> files;
  for (int year : years) {
    std::string path = dir + "/climo_" + std::to_string(year) + ".h5";
    if (!FileExists(path)) {
      throw std::runtime_error("EWA: year " + std::to_string(year) +
                               " has no file " + path);
    }
    files.push_back(path);
  }
  return files;
}

// ------------------------------------------------------------ statistics

namespace {

struct ChannelSums {
  double pixels = 0;
  std::array<double, kEwaChannels> sum{};
  std::array<double, kEwaChannels> sum_sq{};
};

bool ReadStatsCache(const std::string& cache, ChannelSums& out) {
  std::ifstream in(cache);
  std::string magic;
  if (!std::getline(in, magic) || magic != kStatsMagic) return false;
  std::string word, a, b;
  if (!(in >> word >> a) || word != "pixels") return false;
  out.pixels = std::strtod(a.c_str(), nullptr);
  for (int64_t c = 0; c < kEwaChannels; ++c) {
    if (!(in >> word >> a >> b) || word != kEwaVariables[c]) return false;
    out.sum[c] = std::strtod(a.c_str(), nullptr);  // hex floats: exact
    out.sum_sq[c] = std::strtod(b.c_str(), nullptr);
  }
  return out.pixels > 0;
}

std::string HexDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

// Writes the cache to a temporary beside it and renames it into place, so
// a reader never sees half a file. A failure only costs a rescan later.
void WriteStatsCache(const std::string& cache, const ChannelSums& sums) {
  const std::string tmp = cache + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kStatsMagic << "\n"
        << "pixels " << HexDouble(sums.pixels) << "\n";
    for (int64_t c = 0; c < kEwaChannels; ++c) {
      out << kEwaVariables[c] << " " << HexDouble(sums.sum[c]) << " "
          << HexDouble(sums.sum_sq[c]) << "\n";
    }
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), cache.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

EwaChannelStats LoadOrComputeEwaStats(const std::vector<std::string>& files) {
  if (files.empty()) {
    throw std::invalid_argument("EWA statistics: no training files given");
  }
  ChannelSums total;
  for (const std::string& f : files) {
    const std::string cache = f + ".stats";
    ChannelSums sums;
    const int64_t data_time = MtimeNs(f);
    if (data_time < 0) internal::FailEwaFile(f, "does not exist");
    if (!(MtimeNs(cache) >= data_time && ReadStatsCache(cache, sums))) {
      EwaFile file(f);
      sums = ChannelSums();
      file.AccumulateChannelSums(sums.sum, sums.sum_sq);
      sums.pixels =
          static_cast<double>(file.size()) * file.height() * file.width();
      WriteStatsCache(cache, sums);
    }
    total.pixels += sums.pixels;
    for (int64_t c = 0; c < kEwaChannels; ++c) {
      total.sum[c] += sums.sum[c];
      total.sum_sq[c] += sums.sum_sq[c];
    }
  }
  EwaChannelStats stats;
  for (int64_t c = 0; c < kEwaChannels; ++c) {
    const double mean = total.sum[c] / total.pixels;
    const double var =
        std::max(0.0, total.sum_sq[c] / total.pixels - mean * mean);
    if (!(var > 0)) {
      throw std::runtime_error(std::string("EWA statistics: channel ") +
                               kEwaVariables[c] + " is constant over " +
                               files.front() + " ...; cannot normalise");
    }
    stats.mean[c] = mean;
    stats.std[c] = std::sqrt(var);
  }
  return stats;
}

}  // namespace hpcai500::worker
