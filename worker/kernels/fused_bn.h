// Batch norm + ReLU and batch norm + residual add + ReLU as one operation
// (the ends of ResNet's blocks, worker/models/resnet.h with
// ResNetOptions::fused_bn): on CUDA the NHWC kernels of fused_bn_cuda.h, on
// the CPU the host implementation of the same formulas (fused_bn_host.h).
// Statistics, coefficients and the pre-activation are fp32 whatever the
// input's dtype (fp32, bf16 or fp16); the output has the input's dtype. So
// under bf16 autocast the kernels read the convolutions' bf16 outputs as
// they are, compute the statistics in fp32 and write bf16, as cuDNN's
// batch norm does for a bf16 input (PyTorch's autocast leaves batch_norm in
// its input's dtype); the plain model does the same and differs only in
// rounding order (tests/worker/kernels states the tolerance).
//
// CUDA input of another layout is made channels-last first (a copy); the
// output is channels-last there. CPU output keeps the input's layout.
//
// Thread-safety: LibTorch's rules (one thread trains a module at a time).
#ifndef HPCAI500_WORKER_KERNELS_FUSED_BN_H_
#define HPCAI500_WORKER_KERNELS_FUSED_BN_H_

#include <torch/torch.h>

#include <string>

namespace hpcai500::worker {

// Whether this build has the CUDA kernels (LibTorch with CUDA at build
// time). Without them a CUDA tensor makes FusedBatchNormAct throw.
bool FusedBnKernelsBuilt();

// Why a run on `device` cannot use the fused kernels, "" when it can: the
// CUDA kernels are not built in (a CPU device can always use the host
// implementation).
std::string FusedBnUnavailableReason(const torch::Device& device);

// relu(batch_norm(x) + residual), residual undefined for none, with
// autograd (gradients for x, residual, weight and bias). x: [N, C, H, W]
// fp32, bf16 or fp16; residual: x's shape (cast to x's dtype); weight,
// bias, running_mean, running_var: fp32 [C] on x's device. Training: batch
// statistics (N*H*W >= 2), running statistics updated in place with
// `momentum` (torch::nn::BatchNorm2d's rule: unbiased variance); else the
// running statistics. Throws c10::Error for shapes, dtypes or devices it
// does not take.
torch::Tensor FusedBatchNormAct(const torch::Tensor& x,
                                const torch::Tensor& residual,
                                const torch::Tensor& weight,
                                const torch::Tensor& bias,
                                const torch::Tensor& running_mean,
                                const torch::Tensor& running_var, bool training,
                                double momentum, double eps);

// torch::nn::BatchNorm2d followed by ReLU, with an optional residual added
// before the ReLU: the same options, parameters and buffers by the same
// names (weight, bias, running_mean, running_var, num_batches_tracked), so
// a state dict moves between the two. Needs affine and tracked running
// statistics (ResNet's); throws std::invalid_argument otherwise.
class FusedBatchNormAct2dImpl
    : public torch::nn::Cloneable<FusedBatchNormAct2dImpl> {
 public:
  explicit FusedBatchNormAct2dImpl(int64_t num_features)
      : FusedBatchNormAct2dImpl(torch::nn::BatchNormOptions(num_features)) {}
  explicit FusedBatchNormAct2dImpl(const torch::nn::BatchNormOptions& options);

  void reset() override;
  void pretty_print(std::ostream& stream) const override;

  // relu(bn(x) + residual); residual undefined: relu(bn(x)).
  torch::Tensor forward(const torch::Tensor& x,
                        const torch::Tensor& residual = {});

  torch::nn::BatchNormOptions options;
  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  FORWARD_HAS_DEFAULT_ARGS({1, torch::nn::AnyValue(torch::Tensor())})
};
TORCH_MODULE(FusedBatchNormAct2d);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_KERNELS_FUSED_BN_H_
