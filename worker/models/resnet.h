// The ResNet family (ResNet-18/34 with basic blocks, ResNet-50/101 with
// bottlenecks) from one builder, exactly as torchvision defines ResNet v1.5:
// a down-sampling bottleneck strides in its 3x3 convolution, not its first
// 1x1. Convolutions are Kaiming-normal (fan out, ReLU), BatchNorm starts at
// gamma 1 / beta 0, and the last BatchNorm of every residual block starts at
// gamma 0 so each block begins as the identity. Module names follow
// torchvision (conv1, bn1, layer1.0.conv1, ..., fc) so state dicts line up.
//
// Thread-safety: modules follow LibTorch's rules (one thread trains a module
// at a time); the free functions are pure.
#ifndef HPCAI500_WORKER_MODELS_RESNET_H_
#define HPCAI500_WORKER_MODELS_RESNET_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <string>

namespace hpcai500::worker {

struct ResNetOptions {
  int depth = 50;              // 18, 34, 50 or 101
  int64_t num_classes = 1000;  // 0: no head, forward() returns pooled features
  int64_t in_channels = 3;
  // CIFAR-style stem for 32x32 inputs: a 3x3 stride-1 convolution and no
  // max-pool, instead of the 7x7 stride-2 convolution and 3x3 max-pool.
  bool small_input_stem = false;
  bool zero_init_last_bn = true;
};

// The depth of ResNet model `model` of the zoo (worker/models/model_zoo.h:
// resnet18, resnet34, resnet50, resnet101). Throws std::invalid_argument
// naming `model` for anything else.
int ResNetDepthFromName(const std::string& model);

// The outputs of the four stages (strides 4, 8, 16, 32 of the input with the
// ImageNet stem; 1, 2, 4, 8 with the small-input stem), for detectors.
struct ResNetFeatures {
  torch::Tensor c2, c3, c4, c5;
};

// Two 3x3 convolutions: relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut x).
class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t in_channels, int64_t planes, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  // The BatchNorm whose gamma starts at zero.
  torch::nn::BatchNorm2d& last_bn() { return bn2_; }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

// 1x1 reduce, 3x3 (carrying the stride: v1.5), 1x1 expand by 4, plus the
// shortcut.
class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t in_channels, int64_t planes, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::BatchNorm2d& last_bn() { return bn3_; }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Bottleneck);

class ResNetImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument for an unknown depth, in_channels < 1 or
  // num_classes < 0.
  explicit ResNetImpl(const ResNetOptions& options);

  // x: float [B, in_channels, H, W] (any memory format) -> logits
  // [B, num_classes], or pooled features [B, feature_channels()[3]] when the
  // model has no head.
  torch::Tensor forward(const torch::Tensor& x);

  // The stem and four stages without pooling or head.
  ResNetFeatures Features(const torch::Tensor& x);

  // Channels of c2..c5: {64, 128, 256, 512} x expansion (1 or 4).
  std::array<int64_t, 4> feature_channels() const;
  const ResNetOptions& options() const { return options_; }

 private:
  torch::nn::Sequential MakeStage(int64_t planes, int64_t blocks,
                                  int64_t stride);
  torch::Tensor Stem(const torch::Tensor& x);

  // Constant after construction.
  ResNetOptions options_;
  bool bottleneck_ = false;
  int64_t in_channels_ = 64;  // running channel count while building
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr},
      layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_RESNET_H_
