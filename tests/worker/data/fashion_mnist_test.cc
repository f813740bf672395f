#include "worker/data/fashion_mnist.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"
#include "worker/models/resnet_small.h"

namespace hpcai500::worker {
namespace {

class IdxReaderTest : public ::testing::Test {
 protected:
  // Writes a gzipped IDX file: magic, dims (big-endian), then `payload`.
  std::string WriteIdx(const std::string& name, uint32_t magic,
                       const std::vector<uint32_t>& dims,
                       const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> bytes;
    auto put32 = [&](uint32_t v) {
      for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(v >> shift);
    };
    put32(magic);
    for (uint32_t d : dims) put32(d);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    const std::string path = dir_ + "/" + name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), bytes.size()),
              static_cast<int>(bytes.size()));
    gzclose(f);
    return path;
  }

  hpcai500::testing::ScratchDir scratch_{"idx_test"};
  const std::string dir_ = scratch_.path();
};

using hpcai500::testing::ErrorOf;

TEST_F(IdxReaderTest, ReadsImagesAndLabelsInOrder) {
  std::vector<uint8_t> pixels(3 * 2 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = i * 10;
  const std::string images =
      WriteIdx("img.gz", kIdxImagesMagic, {3, 2, 2}, pixels);
  const std::string labels =
      WriteIdx("lbl.gz", kIdxLabelsMagic, {3}, {4, 0, 9});

  torch::Tensor all = ReadIdxImages(images, /*limit=*/0);
  ASSERT_EQ(all.sizes(), torch::IntArrayRef({3, 2, 2}));
  EXPECT_EQ(all[1][0][1].item<int>(), 50);
  EXPECT_EQ(all[2][1][1].item<int>(), 110);
  EXPECT_EQ(ReadIdxImages(images, /*limit=*/2).size(0), 2);

  torch::Tensor l = ReadIdxLabels(labels, /*limit=*/0, /*num_classes=*/10);
  ASSERT_EQ(l.numel(), 3);
  EXPECT_EQ(l.scalar_type(), torch::kInt64);
  EXPECT_EQ(l[0].item<int64_t>(), 4);
  EXPECT_EQ(l[2].item<int64_t>(), 9);
}

TEST_F(IdxReaderTest, TruncatedFileIsAnErrorNamingTheFile) {
  const std::string path =
      WriteIdx("short.gz", kIdxImagesMagic, {3, 2, 2}, std::vector<uint8_t>(7));
  const std::string error = ErrorOf([&] { ReadIdxImages(path, 0); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(IdxReaderTest, WrongMagicIsAnErrorNamingTheFile) {
  const std::string path =
      WriteIdx("labels-as-images.gz", kIdxLabelsMagic, {3}, {1, 2, 3});
  const std::string error = ErrorOf([&] { ReadIdxImages(path, 0); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("magic"), std::string::npos) << error;
}

TEST_F(IdxReaderTest, LimitBeyondTheFileAndBadLabelsAreErrors) {
  const std::string labels = WriteIdx("lbl.gz", kIdxLabelsMagic, {2}, {1, 12});
  EXPECT_NE(ErrorOf([&] { ReadIdxLabels(labels, 5, 10); }).find("holds 2"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ReadIdxLabels(labels, 0, 10); }).find("label 12"),
            std::string::npos);
}

TEST_F(IdxReaderTest, MissingFolderNamesTheFirstFile) {
  const std::string error =
      ErrorOf([&] { LoadFashionMnist(dir_ + "/absent", 0, 0); });
  EXPECT_EQ(error,
            "data: cannot open " + dir_ + "/absent/train-images-idx3-ubyte.gz");
}

}  // namespace
}  // namespace hpcai500::worker
