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

#include "worker/kernels/fused_bn.h"

namespace hpcai500::worker {

struct ResNetOptions {
  int depth = 50;              // 18, 34, 50 or 101
  int64_t num_classes = 1000;  // 0: no head, forward() returns pooled features
  int64_t in_channels = 3;
  // CIFAR-style stem for 32x32 inputs: a 3x3 stride-1 convolution and no
  // max-pool, instead of the 7x7 stride-2 convolution and 3x3 max-pool.
  bool small_input_stem = false;
  bool zero_init_last_bn = true;
  // Batch norm + ReLU (+ add) as fused kernels (--fused-bn). The plain
  // model is unchanged by the option's existence.
  bool fused_bn = false;
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

// A batch norm followed by a ReLU, with a residual added before the ReLU
// where asked: torch::nn::BatchNorm2d and LibTorch ops, or one
// FusedBatchNormAct2d. Either is registered on its owner under `name`, with
// the same parameters and buffers. Copies share the module.
class BnRelu {
 public:
  BnRelu() = default;
  BnRelu(torch::nn::Module& owner, const std::string& name, int64_t channels,
         bool fused);
  // relu(bn(x))
  torch::Tensor operator()(const torch::Tensor& x);
  // relu(bn(x) + residual)
  torch::Tensor AddRelu(const torch::Tensor& x, const torch::Tensor& residual);
  // gamma
  torch::Tensor& weight();

 private:
  torch::nn::BatchNorm2d plain_{nullptr};
  FusedBatchNormAct2d fused_{nullptr};
};

// Two 3x3 convolutions: relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut x).
class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t in_channels, int64_t planes, int64_t stride,
                 bool fused_bn = false);
  torch::Tensor forward(const torch::Tensor& x);
  // The batch norm whose gamma starts at zero.
  BnRelu& last_bn() { return bn2_; }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  BnRelu bn1_, bn2_;
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(BasicBlock);

// 1x1 reduce, 3x3 (carrying the stride: v1.5), 1x1 expand by 4, plus the
// shortcut.
class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t in_channels, int64_t planes, int64_t stride,
                 bool fused_bn = false);
  torch::Tensor forward(const torch::Tensor& x);
  BnRelu& last_bn() { return bn3_; }

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  BnRelu bn1_, bn2_, bn3_;
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
  BnRelu bn1_;
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr},
      layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_RESNET_H_
