// The worker's models and the FLOP counter that measures them.
//
// FLOPs follow ARCHITECTURE.md: convolutions and matrix products only, a
// multiply-add counting 2, taken from the output shapes of the operators a
// forward pass actually executes (BatchNorm, ReLU, pooling are not counted).
//
// Thread-safety: a FlopCounter is not thread-safe; modules follow LibTorch's
// rules (one thread trains a module at a time).
#ifndef HPCAI500_WORKER_MODELS_H_
#define HPCAI500_WORKER_MODELS_H_

#include <torch/torch.h>

#include <cstdint>

namespace hpcai500::worker {

// Sums the FLOPs of the convolutions and linear layers it is shown.
class FlopCounter {
 public:
  // 2 * Cin/groups * kh * kw * Cout * Hout * Wout per image of `output`.
  void AddConv(const torch::nn::Conv2dImpl& conv, const torch::Tensor& output);
  // 2 * in * out per row of `output` (all leading dimensions).
  void AddLinear(const torch::nn::LinearImpl& linear,
                 const torch::Tensor& output);
  // FLOPs of everything added so far, over the whole batch.
  double total() const { return total_; }

 private:
  double total_ = 0;
};

// Runs `conv` (and counts it when `counter` is not null).
torch::Tensor CountedConv(torch::nn::Conv2d& conv, const torch::Tensor& x,
                          FlopCounter* counter);
torch::Tensor CountedLinear(torch::nn::Linear& linear, const torch::Tensor& x,
                            FlopCounter* counter);

// Two 3x3 convolutions with BatchNorm and a shortcut (1x1 projection when the
// shape changes): relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut x).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x, FlopCounter* counter = nullptr);

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
  torch::Tensor forward(const torch::Tensor& x, FlopCounter* counter = nullptr);

 private:
  torch::nn::Conv2d stem_{nullptr};
  torch::nn::BatchNorm2d stem_bn_{nullptr};
  ResidualBlock block1_{nullptr}, block2_{nullptr}, block3_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNetSmall);

// Forward FLOPs of one [1, 1, 28, 28] sample through `model`, counted in
// evaluation mode without gradients; the model's training mode and buffers
// are left as they were. `device` is where the model lives.
double CountForwardFlopsPerSample(ResNetSmall& model,
                                  const torch::Device& device);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_MODELS_H_
