// The formulas of the fused batch norm + (add +) ReLU (worker/kernels), per
// element and per channel, written once for the CUDA kernels
// (fused_bn_kernels.cu) and the host implementation (fused_bn_host.cc), so
// the CPU tests exercise the very arithmetic the GPU runs. Everything is in
// fp32 whatever the tensors' dtype: statistics, coefficients, the
// pre-activation. Also the launch plan of the kernels, plain arithmetic the
// CPU tests check. Standard library only; nvcc and the host compiler both
// read it.
//
// The layout is NHWC seen as a row-major matrix [rows = N*H*W, channels = C].
//
// Thread-safe: pure functions.
#ifndef HPCAI500_WORKER_KERNELS_FUSED_BN_MATH_H_
#define HPCAI500_WORKER_KERNELS_FUSED_BN_MATH_H_

#include <math.h>

#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define HPCAI500_HOST_DEVICE __host__ __device__
#else
#define HPCAI500_HOST_DEVICE
#endif

namespace hpcai500::worker::kernels {

// Welford's running mean and sum of squared deviations of one channel: no
// cancellation between a large sum of squares and a squared mean, which a
// one-pass sum in fp32 suffers over millions of values.
struct WelfordState {
  float count = 0;
  float mean = 0;
  float m2 = 0;  // sum of squared deviations from `mean`
};

HPCAI500_HOST_DEVICE inline void WelfordAdd(WelfordState& s, float x) {
  s.count += 1.0f;
  const float delta = x - s.mean;
  s.mean += delta / s.count;
  s.m2 += delta * (x - s.mean);
}

// Two states of disjoint parts combined (Chan, Golub and LeVeque).
HPCAI500_HOST_DEVICE inline WelfordState WelfordMerge(const WelfordState& a,
                                                      const WelfordState& b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  const float count = a.count + b.count;
  const float delta = b.mean - a.mean;
  const float b_share = b.count / count;
  WelfordState out;
  out.count = count;
  out.mean = a.mean + delta * b_share;
  out.m2 = a.m2 + b.m2 + delta * delta * a.count * b_share;
  return out;
}

// 1 / sqrt(var + eps), var the biased variance, as the normalisation uses.
HPCAI500_HOST_DEVICE inline float InvStd(float biased_var, float eps) {
  return 1.0f / sqrtf(biased_var + eps);
}

// torch::nn::BatchNorm2d's running statistics after one training batch of
// `count` values per channel: an exponential average with factor
// `momentum` of the mean and of the unbiased variance.
HPCAI500_HOST_DEVICE inline void UpdateRunningStats(float mean,
                                                    float biased_var,
                                                    float count, float momentum,
                                                    float& running_mean,
                                                    float& running_var) {
  const float unbiased_var = biased_var * count / (count - 1.0f);
  running_mean = momentum * mean + (1.0f - momentum) * running_mean;
  running_var = momentum * unbiased_var + (1.0f - momentum) * running_var;
}

// The affine map of one channel: bn(x) = x * scale + shift.
struct AffineCoeffs {
  float scale;
  float shift;
};

HPCAI500_HOST_DEVICE inline AffineCoeffs ForwardCoeffs(float mean, float invstd,
                                                       float gamma,
                                                       float beta) {
  const float scale = gamma * invstd;
  return {scale, beta - mean * scale};
}

// relu(bn(x) + residual); residual 0 without one. A NaN passes through, as
// torch::relu lets it.
HPCAI500_HOST_DEVICE inline float ForwardElement(float x, float residual,
                                                 AffineCoeffs k) {
  const float z = x * k.scale + k.shift + residual;
  return z < 0.0f ? 0.0f : z;
}

// The normalised input, which the gradient formulas use.
HPCAI500_HOST_DEVICE inline float Normalize(float x, float mean, float invstd) {
  return (x - mean) * invstd;
}

// The gradient reaching the pre-activation: dy where the output `y` is
// positive, else 0 (torch's threshold_backward on the ReLU's result). It is
// also the residual's gradient.
HPCAI500_HOST_DEVICE inline float ReluGrad(float dy, float y) {
  return y > 0.0f ? dy : 0.0f;
}

// Per channel, from sum(dz) (= dbeta) and sum(dz * xhat) (= dgamma) over
// its `count` values: dx = dx_scale * (dz - dz_mean - xhat * xhat_coeff).
// In training the batch statistics depend on x, which gives the two
// centring terms; in evaluation the running statistics are constants and
// dx = gamma * invstd * dz.
struct BackwardCoeffs {
  float dx_scale;
  float dz_mean;
  float xhat_coeff;
};

HPCAI500_HOST_DEVICE inline BackwardCoeffs GradCoeffs(float gamma, float invstd,
                                                      float sum_dz,
                                                      float sum_dz_xhat,
                                                      float count,
                                                      bool training) {
  if (!training) return {gamma * invstd, 0.0f, 0.0f};
  return {gamma * invstd, sum_dz / count, sum_dz_xhat / count};
}

HPCAI500_HOST_DEVICE inline float BackwardElement(float dz, float xhat,
                                                  BackwardCoeffs k) {
  return k.dx_scale * (dz - k.dz_mean - xhat * k.xhat_coeff);
}

// The launch plan of the per-channel reductions: blocks of
// kChannelsPerBlock channels (threadIdx.x, adjacent in memory) by
// kRowThreads rows (threadIdx.y); `row_blocks` blocks along the rows each
// write one partial result per channel, merged in a fixed order by a second
// kernel (so a result does not depend on scheduling).
inline constexpr int kChannelsPerBlock = 32;
inline constexpr int kRowThreads = 16;
// Enough blocks to fill an H100/H200 (132 SMs) several times over.
inline constexpr int64_t kTargetBlocks = 1024;
// A thread reads at least this many rows before its block has company.
inline constexpr int64_t kMinRowsPerThread = 16;
// Threads per block of the element-wise kernels, and their most blocks (each
// thread then loops).
inline constexpr int kElementwiseThreads = 256;
inline constexpr int64_t kMaxElementwiseBlocks = 8192;

struct ReductionPlan {
  int64_t channel_blocks = 0;
  int64_t row_blocks = 0;
};

// For `rows` > 0 and `channels` > 0.
inline ReductionPlan PlanReduction(int64_t rows, int64_t channels) {
  ReductionPlan plan;
  plan.channel_blocks = (channels + kChannelsPerBlock - 1) / kChannelsPerBlock;
  const int64_t rows_per_block = kRowThreads * kMinRowsPerThread;
  const int64_t wanted = (rows + rows_per_block - 1) / rows_per_block;
  const int64_t room =
      std::max<int64_t>(1, kTargetBlocks / plan.channel_blocks);
  // 65535: CUDA's limit on gridDim.y, which carries the row blocks.
  plan.row_blocks = std::clamp<int64_t>(std::min(wanted, room), 1, 65535);
  return plan;
}

// Blocks of kElementwiseThreads for `elements` > 0 values.
inline int64_t ElementwiseBlocks(int64_t elements) {
  return std::clamp<int64_t>(
      (elements + kElementwiseThreads - 1) / kElementwiseThreads, 1,
      kMaxElementwiseBlocks);
}

// The fp32 scratch the kernels need for `rows` x `channels`: partial
// statistics (3 per channel and row block: count, mean, m2; the backward
// pass uses 2 of them) and three per-channel coefficient arrays.
inline int64_t WorkspaceFloats(int64_t rows, int64_t channels) {
  const ReductionPlan plan = PlanReduction(rows, channels);
  return 3 * plan.row_blocks * channels + 3 * channels;
}

}  // namespace hpcai500::worker::kernels

#endif  // HPCAI500_WORKER_KERNELS_FUSED_BN_MATH_H_
