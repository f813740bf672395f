#include "worker/kernels/fused_bn_host.h"

#include <algorithm>
#include <vector>

#include "worker/kernels/fused_bn_math.h"

namespace hpcai500::worker::kernels {

namespace {

// y = relu(x * scale + shift + residual) with each channel's coefficients.
void ApplyForward(const float* x, const float* residual,
                  const std::vector<AffineCoeffs>& coeffs, BnShape shape,
                  float* y) {
  for (int64_t r = 0; r < shape.rows; ++r) {
    const int64_t row = r * shape.channels;
    for (int64_t c = 0; c < shape.channels; ++c) {
      const float add = residual != nullptr ? residual[row + c] : 0.0f;
      y[row + c] = ForwardElement(x[row + c], add, coeffs[c]);
    }
  }
}

// Each channel's statistics gathered as the kernels gather them: the rows
// dealt round-robin to as many parts as the kernels have threads per
// channel, each part's ShiftedSums turned into Welford statistics and the
// parts merged.
std::vector<WelfordState> ChannelStats(const float* x, BnShape shape) {
  const int64_t channels = shape.channels;
  const ReductionPlan plan = PlanReduction(shape.rows, channels, /*vector=*/1);
  const int64_t parts =
      std::min<int64_t>(shape.rows, plan.row_threads * plan.row_blocks);
  std::vector<WelfordState> stats(channels);
  std::vector<ShiftedSums> sums(channels);
  for (int64_t p = 0; p < parts; ++p) {
    for (int64_t c = 0; c < channels; ++c) sums[c] = {x[p * channels + c]};
    for (int64_t r = p; r < shape.rows; r += parts) {
      for (int64_t c = 0; c < channels; ++c) {
        ShiftedAdd(sums[c], x[r * channels + c]);
      }
    }
    for (int64_t c = 0; c < channels; ++c) {
      stats[c] = WelfordMerge(stats[c], ToWelford(sums[c]));
    }
  }
  return stats;
}

}  // namespace

void HostForwardTrain(const float* x, const float* residual,
                      const float* weight, const float* bias,
                      float* running_mean, float* running_var, float momentum,
                      float eps, BnShape shape, float* y, float* save_mean,
                      float* save_invstd) {
  const std::vector<WelfordState> stats = ChannelStats(x, shape);
  std::vector<AffineCoeffs> coeffs(shape.channels);
  for (int64_t c = 0; c < shape.channels; ++c) {
    const float biased_var = stats[c].m2 / stats[c].count;
    save_mean[c] = stats[c].mean;
    save_invstd[c] = InvStd(biased_var, eps);
    if (running_mean != nullptr && running_var != nullptr) {
      UpdateRunningStats(stats[c].mean, biased_var, stats[c].count, momentum,
                         running_mean[c], running_var[c]);
    }
    coeffs[c] = ForwardCoeffs(save_mean[c], save_invstd[c], weight[c], bias[c]);
  }
  ApplyForward(x, residual, coeffs, shape, y);
}

void HostForwardEval(const float* x, const float* residual, const float* weight,
                     const float* bias, const float* running_mean,
                     const float* running_var, float eps, BnShape shape,
                     float* y, float* save_mean, float* save_invstd) {
  std::vector<AffineCoeffs> coeffs(shape.channels);
  for (int64_t c = 0; c < shape.channels; ++c) {
    save_mean[c] = running_mean[c];
    save_invstd[c] = InvStd(running_var[c], eps);
    coeffs[c] = ForwardCoeffs(save_mean[c], save_invstd[c], weight[c], bias[c]);
  }
  ApplyForward(x, residual, coeffs, shape, y);
}

void HostBackward(const float* dy, const float* x, const float* y,
                  const float* weight, const float* save_mean,
                  const float* save_invstd, bool training, BnShape shape,
                  float* dx, float* dresidual, float* dweight, float* dbias) {
  const int64_t channels = shape.channels;
  std::vector<float> sum_dz(channels, 0.0f), sum_dz_xhat(channels, 0.0f);
  for (int64_t r = 0; r < shape.rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      const float dz = ReluGrad(dy[i], y[i]);
      sum_dz[c] += dz;
      sum_dz_xhat[c] += dz * Normalize(x[i], save_mean[c], save_invstd[c]);
    }
  }
  std::vector<BackwardCoeffs> coeffs(channels);
  const float count = static_cast<float>(shape.rows);
  for (int64_t c = 0; c < channels; ++c) {
    dbias[c] = sum_dz[c];
    dweight[c] = sum_dz_xhat[c];
    coeffs[c] = GradCoeffs(weight[c], save_invstd[c], sum_dz[c], sum_dz_xhat[c],
                           count, training);
  }
  for (int64_t r = 0; r < shape.rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      const float dz = ReluGrad(dy[i], y[i]);
      if (dresidual != nullptr) dresidual[i] = dz;
      dx[i] = BackwardElement(dz, Normalize(x[i], save_mean[c], save_invstd[c]),
                              coeffs[c]);
    }
  }
}

}  // namespace hpcai500::worker::kernels
