// The formulas of the fused batch norm + (add +) ReLU (worker/kernels), per
// element and per channel, written once for the CUDA kernels
// (fused_bn_kernels.cu) and the host implementation (fused_bn_host.cc), so
// the CPU tests exercise the very arithmetic the GPU runs. Everything is in
// fp32 whatever the tensors' dtype: statistics, coefficients, the
// pre-activation. Also the launch plan of the kernels (vector width, grid),
// plain arithmetic the CPU tests check. Standard library only; nvcc and the
// host compiler both read it.
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

// Welford's statistics of one channel's values: their count, mean and sum
// of squared deviations from the mean. Kept as such, not as a sum and a sum
// of squares, so that merging never subtracts a large sum of squares from
// a squared mean (the cancellation a one-pass sum in fp32 suffers over
// millions of values).
struct WelfordState {
  float count = 0;
  float mean = 0;
  float m2 = 0;  // sum of squared deviations from `mean`
};

// Two states of disjoint parts combined (Chan, Golub and LeVeque's parallel
// formula); an empty part changes nothing.
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

// One thread's sums over its share of a channel's values, taken about
// `shift` (the first value it reads): three adds and a multiply per value,
// no division. Centring on a value of the data keeps the sum of squares
// close to the squared deviations, so ToWelford loses little to
// cancellation even where the mean is far from zero.
struct ShiftedSums {
  float shift = 0;
  float count = 0;
  float sum = 0;     // of (x - shift)
  float sum_sq = 0;  // of (x - shift)^2
};

HPCAI500_HOST_DEVICE inline void ShiftedAdd(ShiftedSums& s, float x) {
  const float d = x - s.shift;
  s.count += 1.0f;
  s.sum += d;
  s.sum_sq += d * d;
}

// A thread's sums as Welford statistics, once it has read its values (one
// division per thread and channel); empty sums give an empty state.
HPCAI500_HOST_DEVICE inline WelfordState ToWelford(const ShiftedSums& s) {
  WelfordState w;
  if (s.count == 0.0f) return w;
  const float mean_offset = s.sum / s.count;
  w.count = s.count;
  w.mean = s.shift + mean_offset;
  w.m2 = fmaxf(s.sum_sq - s.sum * mean_offset, 0.0f);
  return w;
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

// How many adjacent values of a row one thread loads at once: 16 bytes
// (8 bf16 or fp16, 4 fp32) where every row starts on a 16-byte boundary
// (`channels` a multiple of that count) and `aligned` (every data pointer
// of the call 16-byte aligned), else 1.
inline constexpr int kVectorBytes = 16;

inline int VectorElements(int64_t channels, int element_bytes, bool aligned) {
  const int wide = kVectorBytes / element_bytes;
  return aligned && wide > 1 && channels % wide == 0 ? wide : 1;
}

// The launch plan of the per-channel reductions (training statistics,
// gradient sums). A block has kReduceThreads threads: `lanes` along the
// channels (each loading `vector` adjacent channels of a row; adjacent
// lanes read adjacent memory) by `row_threads` along the rows. A thread
// sums its rows (ShiftedSums, or plain sums backward); the block merges its
// threads' sums in a fixed tree; each of the `row_blocks` blocks along the
// rows writes one partial result per channel, merged in a fixed order by a
// second kernel of kFinalizeChannels x kFinalizeRows threads a block. So a
// result does not depend on scheduling.
inline constexpr int kReduceThreads = 256;
inline constexpr int kMaxLanes = 32;
inline constexpr int kFinalizeChannels = 32;
inline constexpr int kFinalizeRows = 16;
// Enough blocks to fill an H100/H200 (132 SMs) several times over.
inline constexpr int64_t kTargetBlocks = 1024;
// A thread reads at least this many rows before its block has company.
inline constexpr int64_t kMinRowsPerThread = 16;
// Threads per block of the element-wise kernels, and their most blocks (each
// thread then loops).
inline constexpr int kElementwiseThreads = 256;
inline constexpr int64_t kMaxElementwiseBlocks = 8192;

struct ReductionPlan {
  int vector = 1;       // channels per load
  int lanes = 1;        // threads along the channels, a power of two
  int row_threads = 1;  // kReduceThreads / lanes
  int64_t channel_blocks = 0;
  int64_t row_blocks = 0;
};

// For `rows` > 0, `channels` > 0 and a `vector` (1, 2, 4 or 8) dividing
// `channels`.
inline ReductionPlan PlanReduction(int64_t rows, int64_t channels, int vector) {
  ReductionPlan plan;
  plan.vector = vector;
  const int64_t groups = channels / vector;  // loads per row
  while (plan.lanes < kMaxLanes && plan.lanes < groups) plan.lanes *= 2;
  plan.row_threads = kReduceThreads / plan.lanes;
  plan.channel_blocks = (groups + plan.lanes - 1) / plan.lanes;
  const int64_t rows_per_block = plan.row_threads * kMinRowsPerThread;
  const int64_t wanted = (rows + rows_per_block - 1) / rows_per_block;
  const int64_t room =
      std::max<int64_t>(1, kTargetBlocks / plan.channel_blocks);
  // 65535: CUDA's limit on gridDim.y, which carries the row blocks.
  plan.row_blocks = std::clamp<int64_t>(std::min(wanted, room), 1, 65535);
  return plan;
}

// Blocks of kElementwiseThreads for `loads` > 0 loads of a vector each.
inline int64_t ElementwiseBlocks(int64_t loads) {
  return std::clamp<int64_t>(
      (loads + kElementwiseThreads - 1) / kElementwiseThreads, 1,
      kMaxElementwiseBlocks);
}

// The fp32 scratch the kernels need for `rows` x `channels`, whatever the
// vector width: partial statistics (3 per channel and row block: count,
// mean, m2; the backward pass uses 2 of them) and three per-channel
// coefficient arrays.
inline int64_t WorkspaceFloats(int64_t rows, int64_t channels) {
  int64_t row_blocks = 1;
  for (int vector : {1, 2, 4, 8}) {
    if (channels % vector != 0) continue;
    row_blocks =
        std::max(row_blocks, PlanReduction(rows, channels, vector).row_blocks);
  }
  return 3 * row_blocks * channels + 3 * channels;
}

}  // namespace hpcai500::worker::kernels

#endif  // HPCAI500_WORKER_KERNELS_FUSED_BN_MATH_H_
