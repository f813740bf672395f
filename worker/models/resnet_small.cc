#include "worker/models/resnet_small.h"

namespace hpcai500::worker {

namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .bias(false));
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(int64_t in_channels, int64_t out_channels,
                                     int64_t stride)
    : conv1_(register_module("conv1", Conv(in_channels, out_channels,
                                           /*kernel=*/3, stride))),
      conv2_(register_module("conv2", Conv(out_channels, out_channels,
                                           /*kernel=*/3, /*stride=*/1))),
      bn1_(register_module("bn1", torch::nn::BatchNorm2d(out_channels))),
      bn2_(register_module("bn2", torch::nn::BatchNorm2d(out_channels))) {
  if (stride != 1 || in_channels != out_channels) {
    project_ = register_module(
        "project", Conv(in_channels, out_channels, /*kernel=*/1, stride));
    project_bn_ =
        register_module("project_bn", torch::nn::BatchNorm2d(out_channels));
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = torch::relu(bn1_(conv1_(x)));
  y = bn2_(conv2_(y));
  torch::Tensor shortcut = project_ ? project_bn_(project_(x)) : x;
  return torch::relu(y + shortcut);
}

ResNetSmallImpl::ResNetSmallImpl(int64_t num_classes)
    : stem_(register_module("stem", Conv(1, 16, /*kernel=*/3, /*stride=*/1))),
      stem_bn_(register_module("stem_bn", torch::nn::BatchNorm2d(16))),
      block1_(register_module("block1", ResidualBlock(16, 24, /*stride=*/2))),
      block2_(register_module("block2", ResidualBlock(24, 48, /*stride=*/2))),
      block3_(register_module("block3", ResidualBlock(48, 48, /*stride=*/1))),
      fc_(register_module("fc", torch::nn::Linear(48, num_classes))) {}

torch::Tensor ResNetSmallImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = torch::relu(stem_bn_(stem_(x)));
  y = block1_->forward(y);
  y = block2_->forward(y);
  y = block3_->forward(y);
  y = y.mean({2, 3});
  return fc_(y);
}

}  // namespace hpcai500::worker
