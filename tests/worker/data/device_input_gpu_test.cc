// DevicePrefetcher and ImagesOn on a GPU (ctest label gpu; the CPU half is
// device_input_test.cc): pinned uint8 batches copied on the copy stream, one
// ahead, to a consumer on a stream of its own, give the CPU path's inputs.
// Skips, saying why, where LibTorch sees no GPU.
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"
#include "worker/data/device_input.h"
#include "worker/data/image_data.h"
#include "worker/data/image_loader.h"

namespace hpcai500::worker {
namespace {

using hpcai500::testing::ScratchDir;

// The training batches of one ImageLoader behind the Dataset interface.
class LoaderData final : public Dataset {
 public:
  LoaderData(const ImageDataset& data, const LoaderOptions& options)
      : data_(data), loader_(data, options) {}
  int64_t train_size() const override { return data_.size(); }
  int64_t eval_size() const override { return 0; }
  std::array<int64_t, 3> sample_shape() const override {
    return data_.sample_shape();
  }
  int64_t num_classes() const override { return data_.num_classes(); }
  void StartEpoch(int epoch, int64_t) override { loader_.StartEpoch(epoch); }
  std::optional<Batch> NextTrain() override {
    std::optional<ImageBatch> b = loader_.Next();
    if (!b) return std::nullopt;
    pinned = pinned && b->images.is_pinned() && b->labels.is_pinned();
    return Batch{b->images, b->labels, {}, b->normalization};
  }
  void StartEval() override {}
  std::optional<Batch> NextEval() override { return std::nullopt; }

  bool pinned = true;  // every batch came in page-locked memory

 private:
  const ImageDataset& data_;
  ImageLoader loader_;
};

TEST(DevicePrefetcherOnGpu, DeliversTheCpuPathsInputsToAStreamOfItsOwn) {
  if (!torch::cuda::is_available()) {
    GTEST_SKIP() << "no CUDA device: LibTorch sees no GPU (no NVIDIA driver "
                    "or GPU on this machine, or CUDA_VISIBLE_DEVICES hides it)";
  }
  ScratchDir dir("device_input_gpu");
  std::mt19937_64 rng(3);
  std::vector<char> bytes;
  for (int r = 0; r < 300; ++r) {
    bytes.push_back(static_cast<char>(r % 10));
    for (int64_t i = 1; i < kCifarRecordBytes; ++i) {
      bytes.push_back(static_cast<char>(rng() % 256));
    }
  }
  std::ofstream(dir.path() + "/test_batch.bin", std::ios::binary)
      .write(bytes.data(), bytes.size());
  const Cifar10Dataset data(dir.path(), Split::kEval);
  LoaderOptions options;
  options.batch_size = 64;  // 300 samples: the last batch partial
  options.threads = 2;
  options.shuffle = false;
  ImageLoader reference(data, options);
  options.pin_memory = true;
  auto owned = std::make_unique<LoaderData>(data, options);
  LoaderData* loader = owned.get();
  const torch::Device cuda(torch::kCUDA, 0);
  DevicePrefetcher input(std::move(owned), cuda);

  c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  c10::StreamGuard consumer(impl.getStreamFromGlobalPool(cuda, false));
  for (const bool channels_last : {false, true}) {
    reference.StartEpoch(1);
    input.StartEpoch(1, 0);
    int64_t samples = 0;
    while (std::optional<ImageBatch> want = reference.Next()) {
      std::optional<Batch> got = input.NextTrain();
      ASSERT_TRUE(got.has_value());
      ASSERT_TRUE(got->images.is_cuda());
      const torch::Tensor x = ImagesOn(*got, cuda, channels_last);
      const torch::Tensor cpu =
          ImagesOn(Batch{want->images, want->labels, {}, want->normalization},
                   torch::kCPU, channels_last);
      EXPECT_TRUE(torch::equal(got->labels.cpu(), want->labels));
      EXPECT_LE((x.cpu() - cpu).abs().max().item<float>(), 1e-6f);
      samples += got->size();
    }
    EXPECT_FALSE(input.NextTrain().has_value());
    EXPECT_EQ(samples, 300);
  }
  EXPECT_TRUE(loader->pinned);
}

}  // namespace
}  // namespace hpcai500::worker
