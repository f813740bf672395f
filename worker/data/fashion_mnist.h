// Fashion-MNIST from its gzipped IDX files (Debian's dataset-fashion-mnist
// layout: train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz), held in memory as
// uint8 and normalised one batch at a time.
//
// Thread-safe: pure functions; the tensors returned are owned by the caller.
#ifndef HPCAI500_WORKER_DATA_FASHION_MNIST_H_
#define HPCAI500_WORKER_DATA_FASHION_MNIST_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace hpcai500::worker {

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // uint8, 3 dims
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // uint8, 1 dim

// Reads the first `limit` images (0: all) of a (gzipped) IDX3 file into a
// uint8 tensor [N, rows, cols]. Throws std::runtime_error naming `path` when
// it cannot be opened, has the wrong magic or dimensions, holds fewer than
// `limit` images, or ends early.
torch::Tensor ReadIdxImages(const std::string& path, int64_t limit);

// Reads the first `limit` labels (0: all) of a (gzipped) IDX1 file into an
// int64 tensor [N]; labels must lie in [0, num_classes). Errors as above.
torch::Tensor ReadIdxLabels(const std::string& path, int64_t limit,
                            int64_t num_classes);

struct LabelledImages {
  torch::Tensor images;  // uint8 [N, 28, 28]
  torch::Tensor labels;  // int64 [N]
  int64_t size() const { return labels.size(0); }
};

struct FashionMnist {
  LabelledImages train;
  LabelledImages test;
};

// Loads the four files from `dir`; `train_limit` / `eval_limit` > 0 keep the
// first N images of each set. Throws as the readers do, and when images and
// labels disagree in count.
FashionMnist LoadFashionMnist(const std::string& dir, int64_t train_limit,
                              int64_t eval_limit);

// uint8 [B, 28, 28] -> float [B, 1, 28, 28], normalised with the training
// set's mean and standard deviation.
torch::Tensor NormalizeImages(const torch::Tensor& images);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_FASHION_MNIST_H_
