#include "worker/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

namespace hpcai500::worker {

namespace {

// Fashion-MNIST training-set pixel statistics (of values scaled to [0, 1]).
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

GzFile OpenGz(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) throw std::runtime_error("data: cannot open " + path);
  return f;
}

// Reads exactly `n` bytes or throws naming `path` and `what`.
void ReadExactly(gzFile f, const std::string& path, const std::string& what,
                 void* out, size_t n) {
  auto* dst = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < n) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(f, dst + done, chunk);
    if (got < 0) {
      int errnum = 0;
      throw std::runtime_error("data: " + path + ": reading " + what + ": " +
                               gzerror(f, &errnum));
    }
    if (got == 0) {
      throw std::runtime_error("data: " + path + ": truncated: " + what +
                               " needs " + std::to_string(n) +
                               " bytes, file has " + std::to_string(done));
    }
    done += static_cast<size_t>(got);
  }
}

uint32_t ReadBigEndian32(gzFile f, const std::string& path,
                         const std::string& what) {
  unsigned char b[4];
  ReadExactly(f, path, what, b, sizeof(b));
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
         (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

void CheckMagic(gzFile f, const std::string& path, uint32_t expected) {
  const uint32_t magic = ReadBigEndian32(f, path, "header");
  if (magic != expected) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "bad magic 0x%08x, expected 0x%08x", magic,
                  expected);
    throw std::runtime_error("data: " + path + ": " + buf);
  }
}

int64_t CountToRead(const std::string& path, uint32_t available,
                    int64_t limit) {
  if (limit < 0) throw std::runtime_error("data: negative sample limit");
  if (limit > static_cast<int64_t>(available)) {
    throw std::runtime_error("data: " + path + ": asked for " +
                             std::to_string(limit) + " items, file holds " +
                             std::to_string(available));
  }
  return limit > 0 ? limit : static_cast<int64_t>(available);
}

}  // namespace

torch::Tensor ReadIdxImages(const std::string& path, int64_t limit) {
  GzFile f = OpenGz(path);
  CheckMagic(f.get(), path, kIdxImagesMagic);
  const uint32_t count = ReadBigEndian32(f.get(), path, "header");
  const uint32_t rows = ReadBigEndian32(f.get(), path, "header");
  const uint32_t cols = ReadBigEndian32(f.get(), path, "header");
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    throw std::runtime_error("data: " + path + ": bad image size " +
                             std::to_string(rows) + "x" + std::to_string(cols));
  }
  const int64_t n = CountToRead(path, count, limit);
  torch::Tensor images =
      torch::empty({n, static_cast<int64_t>(rows), static_cast<int64_t>(cols)},
                   torch::kUInt8);
  ReadExactly(f.get(), path, "pixels", images.data_ptr<uint8_t>(),
              static_cast<size_t>(images.numel()));
  return images;
}

torch::Tensor ReadIdxLabels(const std::string& path, int64_t limit,
                            int64_t num_classes) {
  GzFile f = OpenGz(path);
  CheckMagic(f.get(), path, kIdxLabelsMagic);
  const uint32_t count = ReadBigEndian32(f.get(), path, "header");
  const int64_t n = CountToRead(path, count, limit);
  std::vector<uint8_t> raw(static_cast<size_t>(n));
  ReadExactly(f.get(), path, "labels", raw.data(), raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] >= num_classes) {
      throw std::runtime_error(
          "data: " + path + ": label " + std::to_string(raw[i]) + " of item " +
          std::to_string(i) + " is not below " + std::to_string(num_classes));
    }
  }
  return torch::from_blob(raw.data(), {n}, torch::kUInt8).to(torch::kInt64);
}

FashionMnist LoadFashionMnist(const std::string& dir, int64_t train_limit,
                              int64_t eval_limit) {
  constexpr int64_t kClasses = 10;
  auto load = [&](const std::string& prefix, int64_t limit) {
    const std::string images_path =
        dir + "/" + prefix + "-images-idx3-ubyte.gz";
    const std::string labels_path =
        dir + "/" + prefix + "-labels-idx1-ubyte.gz";
    LabelledImages set{ReadIdxImages(images_path, limit),
                       ReadIdxLabels(labels_path, limit, kClasses)};
    if (set.images.size(0) != set.labels.size(0)) {
      throw std::runtime_error("data: " + images_path + " holds " +
                               std::to_string(set.images.size(0)) +
                               " images but " + labels_path + " holds " +
                               std::to_string(set.labels.size(0)) + " labels");
    }
    return set;
  };
  FashionMnist data;
  data.train = load("train", train_limit);
  data.test = load("t10k", eval_limit);
  return data;
}

torch::Tensor NormalizeImages(const torch::Tensor& images) {
  return images.unsqueeze(1)
      .to(torch::kFloat32)
      .div_(255.0)
      .sub_(kPixelMean)
      .div_(kPixelStd);
}

}  // namespace hpcai500::worker
