// The host implementation of the fused batch norm + (add +) ReLU on fp32
// NHWC data seen as [rows = N*H*W, channels = C]: the same formulas as the
// CUDA kernels (fused_bn_math.h), looped on the CPU. The ATen glue
// (fused_bn.h) runs it for CPU tensors, so CPU runs and tests go through the
// arithmetic the GPU uses. Standard library only.
//
// Every pointer is borrowed for the call: `rows` x `channels` values for the
// data arrays (x, residual, y, dy, dx, dresidual), `channels` for the
// per-channel ones. Optional ones may be null where said.
//
// Thread-safe: pure functions of their arguments.
#ifndef HPCAI500_WORKER_KERNELS_FUSED_BN_HOST_H_
#define HPCAI500_WORKER_KERNELS_FUSED_BN_HOST_H_

#include <cstdint>

namespace hpcai500::worker::kernels {

struct BnShape {
  int64_t rows = 0;      // N * H * W
  int64_t channels = 0;  // C
};

// Training: batch statistics (rows >= 2), y = relu(bn(x) + residual).
// Writes the batch mean and 1/sqrt(biased var + eps) to save_mean and
// save_invstd, and updates running_mean/running_var with `momentum` when
// they are not null. residual may be null.
void HostForwardTrain(const float* x, const float* residual,
                      const float* weight, const float* bias,
                      float* running_mean, float* running_var, float momentum,
                      float eps, BnShape shape, float* y, float* save_mean,
                      float* save_invstd);

// Evaluation: the running statistics; save_mean and save_invstd receive
// the statistics used (running_mean and its 1/sqrt(var + eps)).
void HostForwardEval(const float* x, const float* residual, const float* weight,
                     const float* bias, const float* running_mean,
                     const float* running_var, float eps, BnShape shape,
                     float* y, float* save_mean, float* save_invstd);

// Gradients of relu(bn(x) + residual) given dy, the forward's input x and
// output y, and the statistics it saved: dx, dweight (dgamma), dbias
// (dbeta), and dresidual (= the ReLU's gradient) when not null. `training`
// as the forward ran.
void HostBackward(const float* dy, const float* x, const float* y,
                  const float* weight, const float* save_mean,
                  const float* save_invstd, bool training, BnShape shape,
                  float* dx, float* dresidual, float* dweight, float* dbias);

}  // namespace hpcai500::worker::kernels

#endif  // HPCAI500_WORKER_KERNELS_FUSED_BN_HOST_H_
