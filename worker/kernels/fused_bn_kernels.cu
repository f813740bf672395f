// The CUDA kernels behind fused_bn_cuda.h. A training forward pass is three
// kernels: per-block Welford partials of each channel, their merge into the
// statistics and the affine coefficients (and the running statistics), and
// one element-wise pass y = relu(x * scale + shift (+ residual)). The
// backward pass is the same shape: partial sums of dz and dz * xhat, their
// merge into dgamma, dbeta and the dx coefficients, and one element-wise
// pass writing dx (and d residual). Data is read and written in its own
// dtype; everything computed is fp32 (fused_bn_math.h holds the formulas).
// Partials are merged in a fixed order, so a result does not depend on how
// the blocks were scheduled.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "worker/kernels/fused_bn_cuda.h"
#include "worker/kernels/fused_bn_math.h"

namespace hpcai500::worker::kernels {

namespace {

constexpr int kBlockThreads = kChannelsPerBlock * kRowThreads;

__device__ __forceinline__ float Load(const float* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float Load(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ float Load(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
__device__ __forceinline__ void Store(float* p, int64_t i, float v) {
  p[i] = v;
}
__device__ __forceinline__ void Store(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}
__device__ __forceinline__ void Store(__half* p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}

// The channel of this thread in a [kRowThreads, kChannelsPerBlock] block
// whose blockIdx.x counts groups of kChannelsPerBlock channels.
__device__ __forceinline__ int64_t BlockChannel() {
  return static_cast<int64_t>(blockIdx.x) * kChannelsPerBlock + threadIdx.x;
}

// The Welford states of a block's kRowThreads rows of threads merged per
// column, in row order; the result is meaningful in row 0 only. Every
// thread of the block must call it.
__device__ WelfordState MergeColumns(const WelfordState& mine) {
  __shared__ float count[kRowThreads][kChannelsPerBlock];
  __shared__ float mean[kRowThreads][kChannelsPerBlock];
  __shared__ float m2[kRowThreads][kChannelsPerBlock];
  count[threadIdx.y][threadIdx.x] = mine.count;
  mean[threadIdx.y][threadIdx.x] = mine.mean;
  m2[threadIdx.y][threadIdx.x] = mine.m2;
  __syncthreads();
  WelfordState total = mine;
  if (threadIdx.y == 0) {
    for (int t = 1; t < kRowThreads; ++t) {
      WelfordState other;
      other.count = count[t][threadIdx.x];
      other.mean = mean[t][threadIdx.x];
      other.m2 = m2[t][threadIdx.x];
      total = WelfordMerge(total, other);
    }
  }
  return total;
}

// Two per-thread sums added up per column, in row order; meaningful in row
// 0 only. Every thread of the block must call it.
__device__ void SumColumns(float& a, float& b) {
  __shared__ float sum_a[kRowThreads][kChannelsPerBlock];
  __shared__ float sum_b[kRowThreads][kChannelsPerBlock];
  sum_a[threadIdx.y][threadIdx.x] = a;
  sum_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int t = 1; t < kRowThreads; ++t) {
      a += sum_a[t][threadIdx.x];
      b += sum_b[t][threadIdx.x];
    }
  }
}

// Grid (channel blocks, row blocks). partial: [3][gridDim.y][channels]
// (count, mean, m2), one entry per row block and channel.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    PartialStatsKernel(const T* __restrict__ x, int64_t rows, int64_t channels,
                       float* __restrict__ partial) {
  const int64_t c = BlockChannel();
  WelfordState s;
  if (c < channels) {
    const int64_t step = static_cast<int64_t>(gridDim.y) * kRowThreads;
    for (int64_t r =
             static_cast<int64_t>(blockIdx.y) * kRowThreads + threadIdx.y;
         r < rows; r += step) {
      WelfordAdd(s, Load(x, r * channels + c));
    }
  }
  const WelfordState total = MergeColumns(s);
  if (threadIdx.y != 0 || c >= channels) return;
  const int64_t plane = static_cast<int64_t>(gridDim.y) * channels;
  const int64_t slot = static_cast<int64_t>(blockIdx.y) * channels + c;
  partial[slot] = total.count;
  partial[plane + slot] = total.mean;
  partial[2 * plane + slot] = total.m2;
}

// Grid (channel blocks). Merges the `row_blocks` partials of each channel
// into its statistics, running statistics and coefficients.
__global__ void __launch_bounds__(kBlockThreads)
    FinalizeStatsKernel(const float* __restrict__ partial, int64_t row_blocks,
                        int64_t channels, const float* __restrict__ weight,
                        const float* __restrict__ bias,
                        float* __restrict__ running_mean,
                        float* __restrict__ running_var, float momentum,
                        float eps, float* __restrict__ save_mean,
                        float* __restrict__ save_invstd,
                        float* __restrict__ scale, float* __restrict__ shift) {
  const int64_t c = BlockChannel();
  const int64_t plane = row_blocks * channels;
  WelfordState s;
  if (c < channels) {
    for (int64_t b = threadIdx.y; b < row_blocks; b += kRowThreads) {
      const int64_t slot = b * channels + c;
      WelfordState part;
      part.count = partial[slot];
      part.mean = partial[plane + slot];
      part.m2 = partial[2 * plane + slot];
      s = WelfordMerge(s, part);
    }
  }
  const WelfordState total = MergeColumns(s);
  if (threadIdx.y != 0 || c >= channels) return;
  const float biased_var = total.m2 / total.count;
  const float invstd = InvStd(biased_var, eps);
  save_mean[c] = total.mean;
  save_invstd[c] = invstd;
  if (running_mean != nullptr && running_var != nullptr) {
    UpdateRunningStats(total.mean, biased_var, total.count, momentum,
                       running_mean[c], running_var[c]);
  }
  const AffineCoeffs k = ForwardCoeffs(total.mean, invstd, weight[c], bias[c]);
  scale[c] = k.scale;
  shift[c] = k.shift;
}

// One thread per channel: the running statistics as the ones to use.
__global__ void EvalCoeffsKernel(
    const float* __restrict__ running_mean,
    const float* __restrict__ running_var, const float* __restrict__ weight,
    const float* __restrict__ bias, float eps, int64_t channels,
    float* __restrict__ save_mean, float* __restrict__ save_invstd,
    float* __restrict__ scale, float* __restrict__ shift) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  save_mean[c] = running_mean[c];
  save_invstd[c] = InvStd(running_var[c], eps);
  const AffineCoeffs k =
      ForwardCoeffs(save_mean[c], save_invstd[c], weight[c], bias[c]);
  scale[c] = k.scale;
  shift[c] = k.shift;
}

// Element-wise over `elements` = rows x channels values, grid-stride. The
// channel of element i is i % channels; it is computed once and then
// advanced by the stride modulo channels (one compare, no division per
// element).
template <typename T, bool kResidual>
__global__ void __launch_bounds__(kElementwiseThreads)
    ApplyForwardKernel(const T* __restrict__ x, const T* __restrict__ residual,
                       const float* __restrict__ scale,
                       const float* __restrict__ shift, T* __restrict__ y,
                       int64_t elements, int64_t channels) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t c_step = stride % channels;
  int64_t c = i % channels;
  for (; i < elements; i += stride) {
    const float add = kResidual ? Load(residual, i) : 0.0f;
    Store(y, i,
          ForwardElement(Load(x, i), add, AffineCoeffs{scale[c], shift[c]}));
    c += c_step;
    if (c >= channels) c -= channels;
  }
}

// Grid (channel blocks, row blocks). partial: [2][gridDim.y][channels]
// (sum dz, sum dz * xhat).
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    PartialGradsKernel(const T* __restrict__ dy, const T* __restrict__ x,
                       const T* __restrict__ y,
                       const float* __restrict__ save_mean,
                       const float* __restrict__ save_invstd, int64_t rows,
                       int64_t channels, float* __restrict__ partial) {
  const int64_t c = BlockChannel();
  float sum_dz = 0.0f;
  float sum_dz_xhat = 0.0f;
  if (c < channels) {
    const float mean = save_mean[c];
    const float invstd = save_invstd[c];
    const int64_t step = static_cast<int64_t>(gridDim.y) * kRowThreads;
    for (int64_t r =
             static_cast<int64_t>(blockIdx.y) * kRowThreads + threadIdx.y;
         r < rows; r += step) {
      const int64_t i = r * channels + c;
      const float dz = ReluGrad(Load(dy, i), Load(y, i));
      sum_dz += dz;
      sum_dz_xhat += dz * Normalize(Load(x, i), mean, invstd);
    }
  }
  SumColumns(sum_dz, sum_dz_xhat);
  if (threadIdx.y != 0 || c >= channels) return;
  const int64_t plane = static_cast<int64_t>(gridDim.y) * channels;
  const int64_t slot = static_cast<int64_t>(blockIdx.y) * channels + c;
  partial[slot] = sum_dz;
  partial[plane + slot] = sum_dz_xhat;
}

// Grid (channel blocks): dbeta, dgamma and the dx coefficients of each
// channel from its `row_blocks` partial sums.
__global__ void __launch_bounds__(kBlockThreads)
    FinalizeGradsKernel(const float* __restrict__ partial, int64_t row_blocks,
                        int64_t rows, int64_t channels,
                        const float* __restrict__ weight,
                        const float* __restrict__ save_invstd, bool training,
                        float* __restrict__ dweight, float* __restrict__ dbias,
                        float* __restrict__ dx_scale,
                        float* __restrict__ dz_mean,
                        float* __restrict__ xhat_coeff) {
  const int64_t c = BlockChannel();
  const int64_t plane = row_blocks * channels;
  float sum_dz = 0.0f;
  float sum_dz_xhat = 0.0f;
  if (c < channels) {
    for (int64_t b = threadIdx.y; b < row_blocks; b += kRowThreads) {
      sum_dz += partial[b * channels + c];
      sum_dz_xhat += partial[plane + b * channels + c];
    }
  }
  SumColumns(sum_dz, sum_dz_xhat);
  if (threadIdx.y != 0 || c >= channels) return;
  dbias[c] = sum_dz;
  dweight[c] = sum_dz_xhat;
  const BackwardCoeffs k =
      GradCoeffs(weight[c], save_invstd[c], sum_dz, sum_dz_xhat,
                 static_cast<float>(rows), training);
  dx_scale[c] = k.dx_scale;
  dz_mean[c] = k.dz_mean;
  xhat_coeff[c] = k.xhat_coeff;
}

// Element-wise, grid-stride as ApplyForwardKernel: dx (and d residual).
template <typename T, bool kResidualGrad>
__global__ void __launch_bounds__(kElementwiseThreads) ApplyBackwardKernel(
    const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
    const float* __restrict__ save_mean, const float* __restrict__ save_invstd,
    const float* __restrict__ dx_scale, const float* __restrict__ dz_mean,
    const float* __restrict__ xhat_coeff, T* __restrict__ dx,
    T* __restrict__ dresidual, int64_t elements, int64_t channels) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t c_step = stride % channels;
  int64_t c = i % channels;
  for (; i < elements; i += stride) {
    const float dz = ReluGrad(Load(dy, i), Load(y, i));
    if (kResidualGrad) Store(dresidual, i, dz);
    const float xhat = Normalize(Load(x, i), save_mean[c], save_invstd[c]);
    Store(
        dx, i,
        BackwardElement(
            dz, xhat, BackwardCoeffs{dx_scale[c], dz_mean[c], xhat_coeff[c]}));
    c += c_step;
    if (c >= channels) c -= channels;
  }
}

// Where the workspace's parts start (WorkspaceFloats' layout).
struct Workspace {
  float* partial;  // 3 planes of row_blocks x channels
  float* coeff0;   // channels each
  float* coeff1;
  float* coeff2;
};

Workspace Split(float* workspace, const ReductionPlan& plan, int64_t channels) {
  float* coeffs = workspace + 3 * plan.row_blocks * channels;
  return {workspace, coeffs, coeffs + channels, coeffs + 2 * channels};
}

dim3 ReductionGrid(const ReductionPlan& plan) {
  return dim3(static_cast<unsigned>(plan.channel_blocks),
              static_cast<unsigned>(plan.row_blocks));
}

dim3 ReductionBlock() { return dim3(kChannelsPerBlock, kRowThreads); }

dim3 ElementwiseGrid(BnShape shape) {
  return dim3(
      static_cast<unsigned>(ElementwiseBlocks(shape.rows * shape.channels)));
}

bool Valid(BnShape shape, int64_t min_rows) {
  return shape.rows >= min_rows && shape.channels >= 1;
}

// y = relu(x * scale + shift (+ residual)) with each channel's
// coefficients; residual may be null.
template <typename T>
void ApplyForward(const T* x, const T* residual, const float* scale,
                  const float* shift, BnShape shape, T* y,
                  cudaStream_t stream) {
  const int64_t elements = shape.rows * shape.channels;
  if (residual != nullptr) {
    ApplyForwardKernel<T, true>
        <<<ElementwiseGrid(shape), kElementwiseThreads, 0, stream>>>(
            x, residual, scale, shift, y, elements, shape.channels);
  } else {
    ApplyForwardKernel<T, false>
        <<<ElementwiseGrid(shape), kElementwiseThreads, 0, stream>>>(
            x, nullptr, scale, shift, y, elements, shape.channels);
  }
}

template <typename T>
cudaError_t ForwardTrain(const T* x, const T* residual, const float* weight,
                         const float* bias, float* running_mean,
                         float* running_var, float momentum, float eps,
                         BnShape shape, T* y, float* save_mean,
                         float* save_invstd, float* workspace,
                         cudaStream_t stream) {
  const ReductionPlan plan = PlanReduction(shape.rows, shape.channels);
  const Workspace w = Split(workspace, plan, shape.channels);
  PartialStatsKernel<T><<<ReductionGrid(plan), ReductionBlock(), 0, stream>>>(
      x, shape.rows, shape.channels, w.partial);
  FinalizeStatsKernel<<<dim3(static_cast<unsigned>(plan.channel_blocks)),
                        ReductionBlock(), 0, stream>>>(
      w.partial, plan.row_blocks, shape.channels, weight, bias, running_mean,
      running_var, momentum, eps, save_mean, save_invstd, w.coeff0, w.coeff1);
  ApplyForward(x, residual, w.coeff0, w.coeff1, shape, y, stream);
  return cudaGetLastError();
}

template <typename T>
cudaError_t ForwardEval(const T* x, const T* residual, const float* weight,
                        const float* bias, const float* running_mean,
                        const float* running_var, float eps, BnShape shape,
                        T* y, float* save_mean, float* save_invstd,
                        float* workspace, cudaStream_t stream) {
  const ReductionPlan plan = PlanReduction(shape.rows, shape.channels);
  const Workspace w = Split(workspace, plan, shape.channels);
  const unsigned channel_blocks = static_cast<unsigned>(
      (shape.channels + kElementwiseThreads - 1) / kElementwiseThreads);
  EvalCoeffsKernel<<<channel_blocks, kElementwiseThreads, 0, stream>>>(
      running_mean, running_var, weight, bias, eps, shape.channels, save_mean,
      save_invstd, w.coeff0, w.coeff1);
  ApplyForward(x, residual, w.coeff0, w.coeff1, shape, y, stream);
  return cudaGetLastError();
}

template <typename T>
cudaError_t Backward(const T* dy, const T* x, const T* y, const float* weight,
                     const float* save_mean, const float* save_invstd,
                     bool training, BnShape shape, T* dx, T* dresidual,
                     float* dweight, float* dbias, float* workspace,
                     cudaStream_t stream) {
  const ReductionPlan plan = PlanReduction(shape.rows, shape.channels);
  const Workspace w = Split(workspace, plan, shape.channels);
  PartialGradsKernel<T><<<ReductionGrid(plan), ReductionBlock(), 0, stream>>>(
      dy, x, y, save_mean, save_invstd, shape.rows, shape.channels, w.partial);
  FinalizeGradsKernel<<<dim3(static_cast<unsigned>(plan.channel_blocks)),
                        ReductionBlock(), 0, stream>>>(
      w.partial, plan.row_blocks, shape.rows, shape.channels, weight,
      save_invstd, training, dweight, dbias, w.coeff0, w.coeff1, w.coeff2);
  const int64_t elements = shape.rows * shape.channels;
  if (dresidual != nullptr) {
    ApplyBackwardKernel<T, true>
        <<<ElementwiseGrid(shape), kElementwiseThreads, 0, stream>>>(
            dy, x, y, save_mean, save_invstd, w.coeff0, w.coeff1, w.coeff2, dx,
            dresidual, elements, shape.channels);
  } else {
    ApplyBackwardKernel<T, false>
        <<<ElementwiseGrid(shape), kElementwiseThreads, 0, stream>>>(
            dy, x, y, save_mean, save_invstd, w.coeff0, w.coeff1, w.coeff2, dx,
            nullptr, elements, shape.channels);
  }
  return cudaGetLastError();
}

// Calls `f` with a null pointer of the C++ type of `type`.
template <typename F>
cudaError_t WithType(ElementType type, F&& f) {
  switch (type) {
    case ElementType::kFloat32:
      return f(static_cast<float*>(nullptr));
    case ElementType::kBFloat16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case ElementType::kFloat16:
      return f(static_cast<__half*>(nullptr));
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t CudaForwardTrain(ElementType type, const void* x,
                             const void* residual, const float* weight,
                             const float* bias, float* running_mean,
                             float* running_var, float momentum, float eps,
                             BnShape shape, void* y, float* save_mean,
                             float* save_invstd, float* workspace,
                             cudaStream_t stream) {
  if (!Valid(shape, /*min_rows=*/2)) return cudaErrorInvalidValue;
  return WithType(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return ForwardTrain<T>(
        static_cast<const T*>(x), static_cast<const T*>(residual), weight, bias,
        running_mean, running_var, momentum, eps, shape, static_cast<T*>(y),
        save_mean, save_invstd, workspace, stream);
  });
}

cudaError_t CudaForwardEval(ElementType type, const void* x,
                            const void* residual, const float* weight,
                            const float* bias, const float* running_mean,
                            const float* running_var, float eps, BnShape shape,
                            void* y, float* save_mean, float* save_invstd,
                            float* workspace, cudaStream_t stream) {
  if (!Valid(shape, /*min_rows=*/1)) return cudaErrorInvalidValue;
  return WithType(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return ForwardEval<T>(
        static_cast<const T*>(x), static_cast<const T*>(residual), weight, bias,
        running_mean, running_var, eps, shape, static_cast<T*>(y), save_mean,
        save_invstd, workspace, stream);
  });
}

cudaError_t CudaBackward(ElementType type, const void* dy, const void* x,
                         const void* y, const float* weight,
                         const float* save_mean, const float* save_invstd,
                         bool training, BnShape shape, void* dx,
                         void* dresidual, float* dweight, float* dbias,
                         float* workspace, cudaStream_t stream) {
  if (!Valid(shape, /*min_rows=*/1)) return cudaErrorInvalidValue;
  return WithType(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    return Backward<T>(static_cast<const T*>(dy), static_cast<const T*>(x),
                       static_cast<const T*>(y), weight, save_mean, save_invstd,
                       training, shape, static_cast<T*>(dx),
                       static_cast<T*>(dresidual), dweight, dbias, workspace,
                       stream);
  });
}

}  // namespace hpcai500::worker::kernels
