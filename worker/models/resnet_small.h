// The worker's models. Their FLOPs are counted from the operators a forward
// pass executes (worker/flops.h), not declared here.
//
// Thread-safety: modules follow LibTorch's rules (one thread trains a module
// at a time).
#ifndef HPCAI500_WORKER_MODELS_RESNET_SMALL_H_
#define HPCAI500_WORKER_MODELS_RESNET_SMALL_H_

#include <torch/torch.h>

#include <cstdint>

namespace hpcai500::worker {

// Two 3x3 convolutions with BatchNorm and a shortcut (1x1 projection when the
// shape changes): relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut x).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, project_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, project_bn_{nullptr};
};
TORCH_MODULE(ResidualBlock);

// `resnet_small`: a 3x3 stem (16 channels) and three residual blocks (24
// channels at 14x14, 48 at 7x7, 48 at 7x7), global average pooling and a
// linear classifier, for 1-channel 28x28 images: about 11 MFLOPs forward,
// small enough to train Fashion-MNIST to 0.90 on two CPU cores in minutes.
class ResNetSmallImpl : public torch::nn::Module {
 public:
  explicit ResNetSmallImpl(int64_t num_classes = 10);
  // x: float [B, 1, 28, 28] -> logits [B, num_classes].
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d stem_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  ResidualBlock block1_{nullptr}, block2_{nullptr}, block3_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNetSmall);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_RESNET_SMALL_H_
