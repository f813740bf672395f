#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "worker/data/ewa_file.h"
#include "worker/data/ewa_generator.h"
#include "worker/data/make_ewa.h"

#ifdef HPCAI500_HAVE_HDF5
#include <hdf5.h>
#endif

#include "tests/worker/test_util.h"

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;

using hpcai500::testing::ErrorOf;
using hpcai500::testing::ReadFile;

#ifndef HPCAI500_HAVE_HDF5

TEST(EwaData, WithoutHdf5ReaderAndGeneratorSaySo) {
  EXPECT_NE(
      ErrorOf([] { EwaFile f("/nonexistent.h5"); }).find("built without HDF5"),
      std::string::npos);
  EwaGeneratorOptions o;
  o.out = ::testing::TempDir() + "/ewa_nohdf5.h5";
  EXPECT_NE(
      ErrorOf([&] { WriteSyntheticEwaFile(o); }).find("built without HDF5"),
      std::string::npos);
}

#else

constexpr int64_t kH = 96;
constexpr int64_t kW = 144;
constexpr int64_t kSamples = 12;

// One generated reduced-grid file shared by the tests (generation is the
// slow part), plus a scratch folder for copies.
class EwaDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new hpcai500::testing::ScratchDir("ewa_data_test");
    EwaGeneratorOptions o;
    o.out = File();
    o.samples = kSamples;
    o.height = kH;
    o.width = kW;
    o.seed = 7;
    WriteSyntheticEwaFile(o);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Dir() { return dir_->path(); }
  static std::string File() { return Dir() + "/climo_1979.h5"; }
  static std::string CopyTo(const std::string& name) {
    std::string to = Dir() + "/" + name;
    fs::copy_file(File(), to, fs::copy_options::overwrite_existing);
    return to;
  }

 private:
  static hpcai500::testing::ScratchDir* dir_;
};
hpcai500::testing::ScratchDir* EwaDataTest::dir_ = nullptr;

TEST_F(EwaDataTest, GeneratedFileReadsBackWithTheDatasetLayout) {
  EwaFile file(File());
  ASSERT_EQ(file.size(), kSamples);
  EXPECT_EQ(file.height(), kH);
  EXPECT_EQ(file.width(), kW);
  std::set<int64_t> classes;
  for (int64_t i = 0; i < file.size(); ++i) {
    EwaSample s = file.Read(i);
    ASSERT_EQ(s.image.sizes(), (std::vector<int64_t>{16, kH, kW}));
    ASSERT_EQ(s.boxes.dim(), 2);
    ASSERT_EQ(s.boxes.size(1), 4);
    ASSERT_EQ(s.labels.size(0), s.boxes.size(0));
    EXPECT_GE(s.boxes.size(0), 1) << "sample " << i;
    EXPECT_LE(s.boxes.size(0), kEwaMaxBoxes);
    for (int64_t k = 0; k < s.boxes.size(0); ++k) {
      auto b = s.boxes[k];
      const float ymin = b[0].item<float>(), xmin = b[1].item<float>();
      const float ymax = b[2].item<float>(), xmax = b[3].item<float>();
      EXPECT_GE(ymin, 0);
      EXPECT_GE(xmin, 0);
      EXPECT_LE(ymax, kH);
      EXPECT_LE(xmax, kW);
      EXPECT_LT(ymin + 2, ymax);
      EXPECT_LT(xmin + 2, xmax);
      const int64_t label = s.labels[k].item<int64_t>();
      EXPECT_GE(label, 0);
      EXPECT_LT(label, kEwaNumClasses);
      classes.insert(label);
    }
    // Physically plausible magnitudes.
    const double psl = s.image[kPsl].mean().item<double>();
    EXPECT_GT(psl, 99000);
    EXPECT_LT(psl, 103000);
    EXPECT_GT(s.image[kTs].min().item<float>(), 200);
    EXPECT_LT(s.image[kTs].max().item<float>(), 320);
    EXPECT_GE(s.image[kPrect].min().item<float>(), 0);
    EXPECT_GT(s.image[kTmq].max().item<float>(), 40);
  }
  EXPECT_EQ(classes, (std::set<int64_t>{0, 1, 2, 3}));
}

TEST_F(EwaDataTest, SameSeedGivesIdenticalBytesAndAnotherSeedDoesNot) {
  EwaGeneratorOptions o;
  o.samples = kSamples;
  o.height = kH;
  o.width = kW;
  o.seed = 7;
  o.out = Dir() + "/same.h5";
  WriteSyntheticEwaFile(o);
  o.seed = 8;
  o.out = Dir() + "/other.h5";
  WriteSyntheticEwaFile(o);
  const std::string original = ReadFile(File());
  ASSERT_GT(original.size(), size_t{16 * kH * kW * 4 * kSamples});
  EXPECT_TRUE(ReadFile(Dir() + "/same.h5") == original);
  EXPECT_FALSE(ReadFile(Dir() + "/other.h5") == original);
}

TEST_F(EwaDataTest, TruncatedFileIsAnErrorNamingTheFile) {
  const std::string path = CopyTo("truncated.h5");
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string error = ErrorOf([&] { EwaFile f(path); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(EwaDataTest, MissingFileIsAnErrorNamingTheFile) {
  const std::string path = Dir() + "/climo_1800.h5";
  EXPECT_NE(ErrorOf([&] { EwaFile f(path); }).find(path), std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              EwaFilesForYears(Dir(), {1979, 1800});
            }).find("climo_1800.h5"),
            std::string::npos);
}

// Writes `images` float (n, c, 8, 8) and `boxes` (n, 15, 5) of zeros.
void WriteSmallFile(const std::string& path, hsize_t n, hsize_t c) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hsize_t image_dims[4] = {n, c, 8, 8};
  const hsize_t box_dims[3] = {n, 15, 5};
  hid_t is = H5Screate_simple(4, image_dims, nullptr);
  hid_t bs = H5Screate_simple(3, box_dims, nullptr);
  hid_t images = H5Dcreate2(file, "images", H5T_IEEE_F32LE, is, H5P_DEFAULT,
                            H5P_DEFAULT, H5P_DEFAULT);
  hid_t boxes = H5Dcreate2(file, "boxes", H5T_IEEE_F32LE, bs, H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT);
  std::vector<float> zeros(n * c * 64 + n * 75, 0.f);
  H5Dwrite(images, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
           zeros.data());
  H5Dwrite(boxes, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
           zeros.data());
  H5Dclose(boxes);
  H5Dclose(images);
  H5Sclose(bs);
  H5Sclose(is);
  H5Fclose(file);
}

TEST_F(EwaDataTest, WrongShapeIsAnErrorNamingFileAndShape) {
  const std::string bad = Dir() + "/three_channels.h5";
  WriteSmallFile(bad, /*n=*/2, /*c=*/3);
  const std::string error = ErrorOf([&] { EwaFile f(bad); });
  EXPECT_NE(error.find(bad), std::string::npos) << error;
  EXPECT_NE(error.find("(2, 3, 8, 8)"), std::string::npos) << error;

  const std::string good = Dir() + "/sixteen_channels.h5";
  WriteSmallFile(good, /*n=*/2, /*c=*/16);
  EwaFile f(good);
  EXPECT_EQ(f.Read(1).image.sizes(), (std::vector<int64_t>{16, 8, 8}));
  // All-zero box rows have class 0 and zero size: valid, not padding.
  EXPECT_EQ(f.Read(1).labels.size(0), 15);
}

TEST_F(EwaDataTest, NanFieldIsAnErrorNamingFileAndIndex) {
  const std::string path = CopyTo("nan.h5");
  {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    hid_t images = H5Dopen2(file, "images", H5P_DEFAULT);
    hid_t space = H5Dget_space(images);
    const hsize_t start[4] = {3, kPsl, 10, 20};
    const hsize_t count[4] = {1, 1, 1, 1};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    hid_t mem = H5Screate_simple(4, count, nullptr);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    ASSERT_GE(H5Dwrite(images, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, &nan),
              0);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(images);
    H5Fclose(file);
  }
  EwaFile f(path);
  EXPECT_NO_THROW(f.Read(2));
  const std::string error = ErrorOf([&] { f.Read(3); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("sample 3"), std::string::npos) << error;
  EXPECT_NE(error.find("PSL"), std::string::npos) << error;
}

TEST_F(EwaDataTest, OutOfRangeIndexThrows) {
  EwaFile f(File());
  EXPECT_THROW(f.Read(kSamples), std::out_of_range);
  EXPECT_THROW(f.Read(-1), std::out_of_range);
}

TEST_F(EwaDataTest, DatasetConcatenatesYearsAndDescribesSamples) {
  const std::string second = CopyTo("climo_1980.h5");
  EwaDataset data(EwaFilesForYears(Dir(), {1979, 1980}));
  EXPECT_EQ(data.size(), 2 * kSamples);
  EXPECT_EQ(data.Describe(kSamples + 1), second + ":1");
  EXPECT_TRUE(torch::equal(data.Read(kSamples + 1).image,
                           EwaFile(File()).Read(1).image));
}

TEST_F(EwaDataTest, StatsAreCachedBesideTheDataAndReused) {
  const std::string path = CopyTo("climo_1990.h5");
  const std::string cache = path + ".stats";
  EwaChannelStats first = LoadOrComputeEwaStats({path});
  ASSERT_TRUE(fs::exists(cache));
  EXPECT_GT(first.mean[kPsl], 99000);
  EXPECT_LT(first.mean[kPsl], 103000);
  EXPECT_GT(first.std[kTs], 1);
  const auto cache_time = fs::last_write_time(cache);

  EwaChannelStats second = LoadOrComputeEwaStats({path});
  EXPECT_EQ(fs::last_write_time(cache), cache_time);
  for (int c = 0; c < kEwaChannels; ++c) {
    EXPECT_EQ(second.mean[c], first.mean[c]);
    EXPECT_EQ(second.std[c], first.std[c]);
  }

  // A hand-written cache that is newer than the data is what gets used:
  // every channel mean 5, variance 29 / 1 - 25 = 4.
  {
    std::ofstream out(cache, std::ios::trunc);
    out << "hpcai500-ewa-stats v1\npixels 10\n";
    for (const char* name : kEwaVariables) out << name << " 50 290\n";
  }
  fs::last_write_time(cache, fs::last_write_time(path) + std::chrono::hours(1));
  EwaChannelStats from_cache = LoadOrComputeEwaStats({path});
  EXPECT_DOUBLE_EQ(from_cache.mean[kPsl], 5.0);
  EXPECT_DOUBLE_EQ(from_cache.std[kTmq], 2.0);

  // Data newer than the cache: recomputed and rewritten.
  fs::last_write_time(cache, fs::last_write_time(path) - std::chrono::hours(1));
  EwaChannelStats recomputed = LoadOrComputeEwaStats({path});
  EXPECT_EQ(recomputed.mean[kPsl], first.mean[kPsl]);
  EXPECT_GE(fs::last_write_time(cache), fs::last_write_time(path));
}

TEST_F(EwaDataTest, NormalisedSamplesUseTheStats) {
  EwaDataset data({File()});
  EwaChannelStats stats = LoadOrComputeEwaStats({File()});
  data.set_stats(stats);
  torch::Tensor raw = EwaFile(File()).Read(0).image;
  torch::Tensor norm = data.Read(0).image;
  EXPECT_NEAR(
      norm[kPsl][5][5].item<double>(),
      (raw[kPsl][5][5].item<double>() - stats.mean[kPsl]) / stats.std[kPsl],
      1e-3);
  EXPECT_LT(std::fabs(norm.mean().item<double>()), 1.0);
}

// At each cyclone box's centre, sea-level pressure is below the box
// border's mean and the 850 hPa relative vorticity is cyclonic: positive in
// the north (counter-clockwise), negative in the south (clockwise). Row 0 is
// the South Pole.
TEST_F(EwaDataTest, CyclonesArePressureMinimaWithCyclonicRotation) {
  EwaFile file(File());
  int checked = 0, north = 0, south = 0;
  for (int64_t i = 0; i < file.size(); ++i) {
    EwaSample s = file.Read(i);
    auto image = s.image.accessor<float, 3>();
    auto psl = image[kPsl];
    auto u = image[kU850];
    auto v = image[kV850];
    for (int64_t k = 0; k < s.boxes.size(0); ++k) {
      if (s.labels[k].item<int64_t>() == kAtmosphericRiver) continue;
      auto b = s.boxes[k];
      const int64_t y0 = std::floor(b[0].item<float>());
      const int64_t x0 = std::floor(b[1].item<float>());
      const int64_t y1 = std::ceil(b[2].item<float>()) - 1;
      const int64_t x1 = std::ceil(b[3].item<float>()) - 1;
      const int64_t cy =
          std::lround((b[0].item<float>() + b[2].item<float>()) / 2 - 0.5);
      const int64_t cx =
          std::lround((b[1].item<float>() + b[3].item<float>()) / 2 - 0.5);
      double border = 0;
      int n = 0;
      for (int64_t y = y0; y <= y1; ++y) {
        for (int64_t x = x0; x <= x1; ++x) {
          if (y != y0 && y != y1 && x != x0 && x != x1) continue;
          border += psl[y][x];
          ++n;
        }
      }
      border /= n;
      EXPECT_LT(psl[cy][cx], border - 200) << "sample " << i << " box " << k;
      // Grid spacing is positive eastward and northward, so the sign of
      // dv/dx - du/dy needs no metric factors.
      const double vorticity =
          (v[cy][cx + 1] - v[cy][cx - 1]) - (u[cy + 1][cx] - u[cy - 1][cx]);
      const bool northern = cy >= kH / 2;
      (northern ? north : south)++;
      if (northern) {
        EXPECT_GT(vorticity, 0) << "sample " << i << " box " << k;
      } else {
        EXPECT_LT(vorticity, 0) << "sample " << i << " box " << k;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(north, 0);
  EXPECT_GT(south, 0);
}

TEST_F(EwaDataTest, MakeEwaMainWritesTheFileAndRejectsBadFlags) {
  const std::string out = Dir() + "/cli.h5";
  std::string a0 = "make-ewa", a1 = "--out", a2 = out, a3 = "--samples=2",
              a4 = "--height", a5 = "48", a6 = "--width=72", a7 = "--seed=3";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(),
                  a4.data(), a5.data(), a6.data(), a7.data()};
  ASSERT_EQ(MakeEwaMain(8, argv), 0);
  EwaFile f(out);
  EXPECT_EQ(f.size(), 2);
  EXPECT_EQ(f.height(), 48);
  EXPECT_EQ(f.width(), 72);

  std::string bad = "--samples=two";
  char* bad_argv[] = {a0.data(), a1.data(), a2.data(), bad.data()};
  EXPECT_EQ(MakeEwaMain(4, bad_argv), 2);
  std::string small = "--height=8";
  char* small_argv[] = {a0.data(), a1.data(), a2.data(), small.data()};
  EXPECT_EQ(MakeEwaMain(4, small_argv), 2);
  char* no_out[] = {a0.data(), a3.data()};
  EXPECT_EQ(MakeEwaMain(2, no_out), 2);
}

TEST_F(EwaDataTest, MakeEwaHelpPrintsTheUsageAndWritesNothing) {
  for (std::string help : {"--help", "-h"}) {
    std::string a0 = "make-ewa";
    char* argv[] = {a0.data(), help.data()};
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(MakeEwaMain(2, argv), 0) << help;
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("usage: hpcai500-worker make-ewa --out FILE"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("exit codes"), std::string::npos) << out;
  }
}

#endif  // HPCAI500_HAVE_HDF5

}  // namespace
}  // namespace hpcai500::worker
