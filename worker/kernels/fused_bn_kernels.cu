// The CUDA kernels behind fused_bn_cuda.h. A training forward pass is three
// kernels: per-block Welford partials of each channel, their merge into the
// statistics and the affine coefficients (and the running statistics), and
// one element-wise pass y = relu(x * scale + shift (+ residual)). The
// backward pass is the same shape: partial sums of dz and dz * xhat, their
// merge into dgamma, dbeta and the dx coefficients, and one element-wise
// pass writing dx (and d residual). Data is read and written in its own
// dtype; everything computed is fp32 (fused_bn_math.h holds the formulas).
//
// Memory speed: where every row starts 16 bytes aligned (VectorElements),
// each thread loads and stores 16 bytes at a time (8 bf16/fp16, 4 fp32),
// otherwise one value; a reduction thread sums its rows with ShiftedSums
// (no division per element), and the threads' sums are merged with
// Welford's parallel formula in a fixed tree, then the blocks' partials in
// a fixed order, so a result does not depend on scheduling.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "worker/kernels/fused_bn_cuda.h"
#include "worker/kernels/fused_bn_math.h"

namespace hpcai500::worker::kernels {

namespace {

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}

// V adjacent values of a row, moved as one load or store (16 bytes when V
// is VectorElements' wide count).
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Load number `i` of V values of `p`, as floats.
template <int V, typename T>
__device__ __forceinline__ void LoadPack(const T* __restrict__ p, int64_t i,
                                         float (&out)[V]) {
  const Pack<T, V> pack = reinterpret_cast<const Pack<T, V>*>(p)[i];
#pragma unroll
  for (int k = 0; k < V; ++k) out[k] = ToFloat(pack.v[k]);
}

template <int V, typename T>
__device__ __forceinline__ void StorePack(T* __restrict__ p, int64_t i,
                                          const float (&in)[V]) {
  Pack<T, V> pack;
#pragma unroll
  for (int k = 0; k < V; ++k) pack.v[k] = FromFloat<T>(in[k]);
  reinterpret_cast<Pack<T, V>*>(p)[i] = pack;
}

// Where a reduction thread reads: its first channel (lanes load adjacent
// groups of V channels), its first row and the step between its rows.
struct ReduceThread {
  int64_t group;  // channel group: channels group * V .. group * V + V - 1
  int64_t row;
  int64_t row_step;
};

__device__ __forceinline__ ReduceThread ThisReduceThread(int lanes) {
  const int lane = threadIdx.x % lanes;
  const int row_thread = threadIdx.x / lanes;
  const int row_threads = kReduceThreads / lanes;
  ReduceThread t;
  t.group = static_cast<int64_t>(blockIdx.x) * lanes + lane;
  t.row = static_cast<int64_t>(blockIdx.y) * row_threads + row_thread;
  t.row_step = static_cast<int64_t>(gridDim.y) * row_threads;
  return t;
}

// Shared memory for `n` values of State, as float4s: a __shared__ array of
// a type with member initializers (WelfordState) cannot be declared.
template <typename State>
__host__ __device__ constexpr int SharedFloat4s(int n) {
  return static_cast<int>((sizeof(State) * n + sizeof(float4) - 1) /
                          sizeof(float4));
}

// The V states of each thread merged over the block's row threads with
// `merge`, in a fixed tree (row thread i with i + half, halving); the
// result is meaningful in the first row of threads (threadIdx.x < lanes).
// Every thread of the block must call it.
template <int V, typename State, typename Merge>
__device__ void MergeRowThreads(State (&mine)[V], int lanes, Merge merge) {
  __shared__ float4 raw[SharedFloat4s<State>(kReduceThreads * V)];
  State* scratch = reinterpret_cast<State*>(raw);
#pragma unroll
  for (int k = 0; k < V; ++k) scratch[threadIdx.x * V + k] = mine[k];
  __syncthreads();
  for (int half = kReduceThreads / lanes / 2; half > 0; half /= 2) {
    const int row_thread = threadIdx.x / lanes;
    if (row_thread < half) {
      const int other = threadIdx.x + half * lanes;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        mine[k] = merge(mine[k], scratch[other * V + k]);
        scratch[threadIdx.x * V + k] = mine[k];
      }
    }
    __syncthreads();
  }
}

// Grid (channel blocks, row blocks) of kReduceThreads threads; lanes = the
// plan's. partial: [3][gridDim.y][channels] (count, mean, m2), one entry
// per row block and channel.
template <typename T, int V>
__global__ void __launch_bounds__(kReduceThreads)
    PartialStatsKernel(const T* __restrict__ x, int64_t rows, int64_t channels,
                       int lanes, float* __restrict__ partial) {
  const ReduceThread t = ThisReduceThread(lanes);
  const int64_t groups = channels / V;
  WelfordState mine[V];
  if (t.group < groups && t.row < rows) {
    float first[V];
    LoadPack<V>(x, t.row * groups + t.group, first);
    ShiftedSums sums[V];
#pragma unroll
    for (int k = 0; k < V; ++k) sums[k].shift = first[k];
    for (int64_t r = t.row; r < rows; r += t.row_step) {
      float v[V];
      LoadPack<V>(x, r * groups + t.group, v);
#pragma unroll
      for (int k = 0; k < V; ++k) ShiftedAdd(sums[k], v[k]);
    }
#pragma unroll
    for (int k = 0; k < V; ++k) mine[k] = ToWelford(sums[k]);
  }
  MergeRowThreads<V>(mine, lanes,
                     [](const WelfordState& a, const WelfordState& b) {
                       return WelfordMerge(a, b);
                     });
  if (threadIdx.x >= lanes || t.group >= groups) return;
  const int64_t plane = static_cast<int64_t>(gridDim.y) * channels;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int64_t slot =
        static_cast<int64_t>(blockIdx.y) * channels + t.group * V + k;
    partial[slot] = mine[k].count;
    partial[plane + slot] = mine[k].mean;
    partial[2 * plane + slot] = mine[k].m2;
  }
}

// Grid (ceil(channels / kFinalizeChannels)) of kFinalizeChannels x
// kFinalizeRows threads: the `row_blocks` partials of each channel merged
// in a fixed order, by column then down the block's rows. Meaningful in
// row 0 (threadIdx.y == 0) only; every thread of the block must call it.
template <typename State, typename Merge>
__device__ State MergeFinalizeColumns(State mine, Merge merge) {
  __shared__ float4
      raw[SharedFloat4s<State>(kFinalizeRows * kFinalizeChannels)];
  State* column = reinterpret_cast<State*>(raw);
  column[threadIdx.y * kFinalizeChannels + threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int t = 1; t < kFinalizeRows; ++t) {
      mine = merge(mine, column[t * kFinalizeChannels + threadIdx.x]);
    }
  }
  return mine;
}

__device__ __forceinline__ int64_t FinalizeChannel() {
  return static_cast<int64_t>(blockIdx.x) * kFinalizeChannels + threadIdx.x;
}

// Merges the `row_blocks` partials of each channel into its statistics,
// running statistics and coefficients.
__global__ void __launch_bounds__(kFinalizeChannels* kFinalizeRows)
    FinalizeStatsKernel(const float* __restrict__ partial, int64_t row_blocks,
                        int64_t channels, const float* __restrict__ weight,
                        const float* __restrict__ bias,
                        float* __restrict__ running_mean,
                        float* __restrict__ running_var, float momentum,
                        float eps, float* __restrict__ save_mean,
                        float* __restrict__ save_invstd,
                        float* __restrict__ scale, float* __restrict__ shift) {
  const int64_t c = FinalizeChannel();
  const int64_t plane = row_blocks * channels;
  WelfordState s;
  if (c < channels) {
    for (int64_t b = threadIdx.y; b < row_blocks; b += kFinalizeRows) {
      const int64_t slot = b * channels + c;
      WelfordState part;
      part.count = partial[slot];
      part.mean = partial[plane + slot];
      part.m2 = partial[2 * plane + slot];
      s = WelfordMerge(s, part);
    }
  }
  const WelfordState total =
      MergeFinalizeColumns(s, [](const WelfordState& a, const WelfordState& b) {
        return WelfordMerge(a, b);
      });
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

// Element-wise over `loads` = rows x channels / V loads of V values,
// grid-stride. The channel group of load i is i % groups; it is computed
// once and then advanced by the stride modulo groups (one compare, no
// division per load).
template <typename T, int V, bool kResidual>
__global__ void __launch_bounds__(kElementwiseThreads)
    ApplyForwardKernel(const T* __restrict__ x, const T* __restrict__ residual,
                       const float* __restrict__ scale,
                       const float* __restrict__ shift, T* __restrict__ y,
                       int64_t loads, int64_t groups) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t g_step = stride % groups;
  int64_t g = i % groups;
  for (; i < loads; i += stride) {
    float v[V];
    float add[V] = {};
    LoadPack<V>(x, i, v);
    if (kResidual) LoadPack<V>(residual, i, add);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int64_t c = g * V + k;
      v[k] = ForwardElement(v[k], add[k], AffineCoeffs{scale[c], shift[c]});
    }
    StorePack<V>(y, i, v);
    g += g_step;
    if (g >= groups) g -= groups;
  }
}

// Grid and block as PartialStatsKernel. partial: [2][gridDim.y][channels]
// (sum dz, sum dz * xhat).
template <typename T, int V>
__global__ void __launch_bounds__(kReduceThreads)
    PartialGradsKernel(const T* __restrict__ dy, const T* __restrict__ x,
                       const T* __restrict__ y,
                       const float* __restrict__ save_mean,
                       const float* __restrict__ save_invstd, int64_t rows,
                       int64_t channels, int lanes,
                       float* __restrict__ partial) {
  const ReduceThread t = ThisReduceThread(lanes);
  const int64_t groups = channels / V;
  float2 mine[V];  // (sum dz, sum dz * xhat)
#pragma unroll
  for (int k = 0; k < V; ++k) mine[k] = make_float2(0.0f, 0.0f);
  if (t.group < groups) {
    float mean[V], invstd[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mean[k] = save_mean[t.group * V + k];
      invstd[k] = save_invstd[t.group * V + k];
    }
    for (int64_t r = t.row; r < rows; r += t.row_step) {
      const int64_t i = r * groups + t.group;
      float g[V], xs[V], ys[V];
      LoadPack<V>(dy, i, g);
      LoadPack<V>(x, i, xs);
      LoadPack<V>(y, i, ys);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float dz = ReluGrad(g[k], ys[k]);
        mine[k].x += dz;
        mine[k].y += dz * Normalize(xs[k], mean[k], invstd[k]);
      }
    }
  }
  MergeRowThreads<V>(mine, lanes, [](const float2& a, const float2& b) {
    return make_float2(a.x + b.x, a.y + b.y);
  });
  if (threadIdx.x >= lanes || t.group >= groups) return;
  const int64_t plane = static_cast<int64_t>(gridDim.y) * channels;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int64_t slot =
        static_cast<int64_t>(blockIdx.y) * channels + t.group * V + k;
    partial[slot] = mine[k].x;
    partial[plane + slot] = mine[k].y;
  }
}

// dbeta, dgamma and the dx coefficients of each channel from its
// `row_blocks` partial sums; grid and block as FinalizeStatsKernel.
__global__ void __launch_bounds__(kFinalizeChannels* kFinalizeRows)
    FinalizeGradsKernel(const float* __restrict__ partial, int64_t row_blocks,
                        int64_t rows, int64_t channels,
                        const float* __restrict__ weight,
                        const float* __restrict__ save_invstd, bool training,
                        float* __restrict__ dweight, float* __restrict__ dbias,
                        float* __restrict__ dx_scale,
                        float* __restrict__ dz_mean,
                        float* __restrict__ xhat_coeff) {
  const int64_t c = FinalizeChannel();
  const int64_t plane = row_blocks * channels;
  float2 sums = make_float2(0.0f, 0.0f);
  if (c < channels) {
    for (int64_t b = threadIdx.y; b < row_blocks; b += kFinalizeRows) {
      sums.x += partial[b * channels + c];
      sums.y += partial[plane + b * channels + c];
    }
  }
  sums = MergeFinalizeColumns(sums, [](const float2& a, const float2& b) {
    return make_float2(a.x + b.x, a.y + b.y);
  });
  if (threadIdx.y != 0 || c >= channels) return;
  dbias[c] = sums.x;
  dweight[c] = sums.y;
  const BackwardCoeffs k = GradCoeffs(weight[c], save_invstd[c], sums.x, sums.y,
                                      static_cast<float>(rows), training);
  dx_scale[c] = k.dx_scale;
  dz_mean[c] = k.dz_mean;
  xhat_coeff[c] = k.xhat_coeff;
}

// Element-wise, grid-stride as ApplyForwardKernel: dx (and d residual).
template <typename T, int V, bool kResidualGrad>
__global__ void __launch_bounds__(kElementwiseThreads) ApplyBackwardKernel(
    const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
    const float* __restrict__ save_mean, const float* __restrict__ save_invstd,
    const float* __restrict__ dx_scale, const float* __restrict__ dz_mean,
    const float* __restrict__ xhat_coeff, T* __restrict__ dx,
    T* __restrict__ dresidual, int64_t loads, int64_t groups) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t g_step = stride % groups;
  int64_t g = i % groups;
  for (; i < loads; i += stride) {
    float dz[V], xs[V], ys[V], out[V];
    LoadPack<V>(dy, i, dz);
    LoadPack<V>(x, i, xs);
    LoadPack<V>(y, i, ys);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int64_t c = g * V + k;
      dz[k] = ReluGrad(dz[k], ys[k]);
      const float xhat = Normalize(xs[k], save_mean[c], save_invstd[c]);
      out[k] = BackwardElement(
          dz[k], xhat, BackwardCoeffs{dx_scale[c], dz_mean[c], xhat_coeff[c]});
    }
    if (kResidualGrad) StorePack<V>(dresidual, i, dz);
    StorePack<V>(dx, i, out);
    g += g_step;
    if (g >= groups) g -= groups;
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

dim3 FinalizeGrid(int64_t channels) {
  return dim3(static_cast<unsigned>((channels + kFinalizeChannels - 1) /
                                    kFinalizeChannels));
}

dim3 FinalizeBlock() { return dim3(kFinalizeChannels, kFinalizeRows); }

dim3 ElementwiseGrid(BnShape shape, int vector) {
  return dim3(static_cast<unsigned>(
      ElementwiseBlocks(shape.rows * shape.channels / vector)));
}

bool Valid(BnShape shape, int64_t min_rows) {
  return shape.rows >= min_rows && shape.channels >= 1;
}

// The vector width for T's data at these pointers (null ones aside).
template <typename T>
int VectorFor(BnShape shape, std::initializer_list<const void*> pointers) {
  bool aligned = true;
  for (const void* p : pointers) {
    aligned = aligned && reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0;
  }
  return VectorElements(shape.channels, sizeof(T), aligned);
}

// Calls f(std::integral_constant<int, V>) with V the wide count of T
// (kVectorBytes / sizeof(T)) when `vector` is that, else V = 1.
template <typename T, typename F>
cudaError_t WithVector(int vector, F&& f) {
  constexpr int kWide = kVectorBytes / sizeof(T);
  if (vector == kWide) return f(std::integral_constant<int, kWide>());
  return f(std::integral_constant<int, 1>());
}

// y = relu(x * coeff0 + coeff1 (+ residual)) over the whole tensor, V
// values a load: the element-wise half of both forward passes.
template <typename T, int V>
void LaunchApplyForward(const T* x, const T* residual, const Workspace& w,
                        BnShape shape, T* y, cudaStream_t stream) {
  const int64_t loads = shape.rows * shape.channels / V;
  const int64_t groups = shape.channels / V;
  if (residual != nullptr) {
    ApplyForwardKernel<T, V, true>
        <<<ElementwiseGrid(shape, V), kElementwiseThreads, 0, stream>>>(
            x, residual, w.coeff0, w.coeff1, y, loads, groups);
  } else {
    ApplyForwardKernel<T, V, false>
        <<<ElementwiseGrid(shape, V), kElementwiseThreads, 0, stream>>>(
            x, nullptr, w.coeff0, w.coeff1, y, loads, groups);
  }
}

template <typename T>
cudaError_t ForwardTrain(const T* x, const T* residual, const float* weight,
                         const float* bias, float* running_mean,
                         float* running_var, float momentum, float eps,
                         BnShape shape, T* y, float* save_mean,
                         float* save_invstd, float* workspace,
                         cudaStream_t stream) {
  const int vector = VectorFor<T>(shape, {x, residual, y});
  return WithVector<T>(vector, [&](auto wide) {
    constexpr int V = decltype(wide)::value;
    const ReductionPlan plan = PlanReduction(shape.rows, shape.channels, V);
    const Workspace w = Split(workspace, plan, shape.channels);
    PartialStatsKernel<T, V>
        <<<ReductionGrid(plan), kReduceThreads, 0, stream>>>(
            x, shape.rows, shape.channels, plan.lanes, w.partial);
    FinalizeStatsKernel<<<FinalizeGrid(shape.channels), FinalizeBlock(), 0,
                          stream>>>(
        w.partial, plan.row_blocks, shape.channels, weight, bias, running_mean,
        running_var, momentum, eps, save_mean, save_invstd, w.coeff0, w.coeff1);
    LaunchApplyForward<T, V>(x, residual, w, shape, y, stream);
    return cudaGetLastError();
  });
}

template <typename T>
cudaError_t ForwardEval(const T* x, const T* residual, const float* weight,
                        const float* bias, const float* running_mean,
                        const float* running_var, float eps, BnShape shape,
                        T* y, float* save_mean, float* save_invstd,
                        float* workspace, cudaStream_t stream) {
  const int vector = VectorFor<T>(shape, {x, residual, y});
  return WithVector<T>(vector, [&](auto wide) {
    constexpr int V = decltype(wide)::value;
    const ReductionPlan plan = PlanReduction(shape.rows, shape.channels, V);
    const Workspace w = Split(workspace, plan, shape.channels);
    const unsigned channel_blocks = static_cast<unsigned>(
        (shape.channels + kElementwiseThreads - 1) / kElementwiseThreads);
    EvalCoeffsKernel<<<channel_blocks, kElementwiseThreads, 0, stream>>>(
        running_mean, running_var, weight, bias, eps, shape.channels, save_mean,
        save_invstd, w.coeff0, w.coeff1);
    LaunchApplyForward<T, V>(x, residual, w, shape, y, stream);
    return cudaGetLastError();
  });
}

template <typename T>
cudaError_t Backward(const T* dy, const T* x, const T* y, const float* weight,
                     const float* save_mean, const float* save_invstd,
                     bool training, BnShape shape, T* dx, T* dresidual,
                     float* dweight, float* dbias, float* workspace,
                     cudaStream_t stream) {
  const int vector = VectorFor<T>(shape, {dy, x, y, dx, dresidual});
  return WithVector<T>(vector, [&](auto wide) {
    constexpr int V = decltype(wide)::value;
    const ReductionPlan plan = PlanReduction(shape.rows, shape.channels, V);
    const Workspace w = Split(workspace, plan, shape.channels);
    PartialGradsKernel<T, V>
        <<<ReductionGrid(plan), kReduceThreads, 0, stream>>>(
            dy, x, y, save_mean, save_invstd, shape.rows, shape.channels,
            plan.lanes, w.partial);
    FinalizeGradsKernel<<<FinalizeGrid(shape.channels), FinalizeBlock(), 0,
                          stream>>>(
        w.partial, plan.row_blocks, shape.rows, shape.channels, weight,
        save_invstd, training, dweight, dbias, w.coeff0, w.coeff1, w.coeff2);
    const int64_t loads = shape.rows * shape.channels / V;
    const int64_t groups = shape.channels / V;
    if (dresidual != nullptr) {
      ApplyBackwardKernel<T, V, true>
          <<<ElementwiseGrid(shape, V), kElementwiseThreads, 0, stream>>>(
              dy, x, y, save_mean, save_invstd, w.coeff0, w.coeff1, w.coeff2,
              dx, dresidual, loads, groups);
    } else {
      ApplyBackwardKernel<T, V, false>
          <<<ElementwiseGrid(shape, V), kElementwiseThreads, 0, stream>>>(
              dy, x, y, save_mean, save_invstd, w.coeff0, w.coeff1, w.coeff2,
              dx, nullptr, loads, groups);
    }
    return cudaGetLastError();
  });
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
