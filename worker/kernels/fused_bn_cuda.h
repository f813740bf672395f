// The CUDA kernels of the fused batch norm + (add +) ReLU on NHWC data seen
// as [rows = N*H*W, channels = C] (fused_bn_kernels.cu): a plain C++
// interface of raw device pointers, sizes and a stream, so that nvcc never
// reads a LibTorch header; the ATen glue is fused_bn.cc. Built only where
// LibTorch has CUDA (HPCAI500_WORKER_KERNELS_CUDA).
//
// Contract shared by every launcher: all pointers are device memory
// borrowed until the stream has run the work; the data arrays hold `rows` x
// `channels` values of `type`, densely packed; weight, bias, the running and
// saved statistics are fp32 arrays of `channels`; `workspace` holds
// WorkspaceFloats(rows, channels) floats (fused_bn_math.h) not used by
// anything else on the stream meanwhile. rows >= 1 (>= 2 in training) and
// channels >= 1. The work is queued on `stream`; the result is the launch
// error, cudaSuccess when all were queued.
//
// Thread-safe: each call queues its own kernels.
#ifndef HPCAI500_WORKER_KERNELS_FUSED_BN_CUDA_H_
#define HPCAI500_WORKER_KERNELS_FUSED_BN_CUDA_H_

#include <cuda_runtime_api.h>

#include "worker/kernels/fused_bn_host.h"

namespace hpcai500::worker::kernels {

// The element types of the data arrays; statistics are fp32 whatever it is.
enum class ElementType { kFloat32, kBFloat16, kFloat16 };

// As HostForwardTrain (fused_bn_host.h): residual, running_mean and
// running_var may be null.
cudaError_t CudaForwardTrain(ElementType type, const void* x,
                             const void* residual, const float* weight,
                             const float* bias, float* running_mean,
                             float* running_var, float momentum, float eps,
                             BnShape shape, void* y, float* save_mean,
                             float* save_invstd, float* workspace,
                             cudaStream_t stream);

// As HostForwardEval; residual may be null.
cudaError_t CudaForwardEval(ElementType type, const void* x,
                            const void* residual, const float* weight,
                            const float* bias, const float* running_mean,
                            const float* running_var, float eps, BnShape shape,
                            void* y, float* save_mean, float* save_invstd,
                            float* workspace, cudaStream_t stream);

// As HostBackward; dresidual may be null.
cudaError_t CudaBackward(ElementType type, const void* dy, const void* x,
                         const void* y, const float* weight,
                         const float* save_mean, const float* save_invstd,
                         bool training, BnShape shape, void* dx,
                         void* dresidual, float* dweight, float* dbias,
                         float* workspace, cudaStream_t stream);

}  // namespace hpcai500::worker::kernels

#endif  // HPCAI500_WORKER_KERNELS_FUSED_BN_CUDA_H_
