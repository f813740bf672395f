#include "methodology/forecast.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "methodology/regress_band.h"

namespace hpcai500 {
namespace {

// The rates c the fit tries for each shape, log-spaced: a profile over the
// shape leaves a linear least-squares problem in (a, b), solved exactly, so
// the fit never fails to converge, whatever the points. A power law with c
// near 0 is a log-linear curve (the most optimistic the family gets); an
// exponential with c = 4 is saturated after two epochs.
constexpr double kMinRate = 0.02;
constexpr double kMaxRate = 4.0;
constexpr int kRates = 48;

// The decay g(e) of q(e) = a - b * g(e): a power law e^(-c), the usual tail
// of a learning curve, or an exponential exp(-c e), a curve that saturates
// (what a decaying learning rate makes).
struct Shape {
  bool exponential = false;
  double c = 1;
  double G(double epoch) const {
    return exponential ? std::exp(-c * epoch) : std::pow(epoch, -c);
  }
};

struct Curve {
  double a = 0;
  double b = 0;
  Shape shape;
  double At(double epoch) const {
    return std::min(1.0, a - b * shape.G(epoch));
  }
};

// What the fit needs of the epochs for one shape: the basis x_i = g(e_i),
// its mean and its sum of squared deviations. Independent of the
// qualities, so computed once for every bootstrap replicate.
struct Basis {
  Shape shape;
  std::vector<double> x;
  double mean = 0;
  double sxx = 0;
};

std::vector<Basis> MakeBases(const std::vector<CurvePoint>& curve) {
  std::vector<Basis> bases;
  const double step = std::log(kMaxRate / kMinRate) / (kRates - 1);
  for (bool exponential : {false, true}) {
    for (int k = 0; k < kRates; ++k) {
      Basis basis;
      basis.shape = Shape{exponential, kMinRate * std::exp(step * k)};
      for (const CurvePoint& point : curve) {
        basis.x.push_back(basis.shape.G(point.epoch));
        basis.mean += basis.x.back();
      }
      basis.mean /= static_cast<double>(curve.size());
      for (double x : basis.x) {
        basis.sxx += (x - basis.mean) * (x - basis.mean);
      }
      bases.push_back(std::move(basis));
    }
  }
  return bases;
}

// The least-squares curve through `y` (one quality per basis point), with
// its sum of squared residuals. A falling best line is replaced by a flat
// one (b = 0): a learning curve that falls is read as having saturated, not
// as heading further down.
Curve Fit(const std::vector<Basis>& bases, const std::vector<double>& y,
          double* sse) {
  double y_mean = 0;
  for (double v : y) y_mean += v;
  y_mean /= static_cast<double>(y.size());
  Curve best;
  double best_sse = INFINITY;
  for (const Basis& basis : bases) {
    double sxy = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      sxy += (basis.x[i] - basis.mean) * (y[i] - y_mean);
    }
    const double slope = basis.sxx > 0 ? sxy / basis.sxx : 0;
    Curve curve{y_mean - slope * basis.mean, -slope, basis.shape};
    if (curve.b < 0) curve = Curve{y_mean, 0, basis.shape};
    double residuals = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double r = y[i] - (curve.a - curve.b * basis.x[i]);
      residuals += r * r;
    }
    if (residuals < best_sse) {
      best_sse = residuals;
      best = curve;
    }
  }
  *sse = best_sse;
  return best;
}

// Standard normal draws from a generator whose output the C++ standard
// fixes (mt19937_64), by Box-Muller, so the same curve gives the same
// forecast on every platform (std::normal_distribution's algorithm is the
// library's choice).
class Normal {
 public:
  explicit Normal(uint64_t seed) : engine_(seed) {}
  double Next() {
    const double u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  // In (0, 1]: never 0, whose log is -inf.
  double Uniform() {
    return (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53;
  }
  std::mt19937_64 engine_;
};

}  // namespace

std::vector<CurvePoint> QualityCurve(
    const google::protobuf::RepeatedPtrField<v1::EpochSummary>& epochs) {
  std::vector<CurvePoint> curve;
  for (const v1::EpochSummary& epoch : epochs) {
    if (epoch.accuracy() >= 0)
      curve.push_back({epoch.epoch(), epoch.accuracy()});
  }
  std::sort(curve.begin(), curve.end(),
            [](const CurvePoint& x, const CurvePoint& y) {
              return x.epoch < y.epoch;
            });
  return curve;
}

absl::StatusOr<v1::Forecast> ForecastQuality(std::vector<CurvePoint> curve,
                                             double target, int budget,
                                             const ForecastOptions& options) {
  const int points = static_cast<int>(curve.size());
  if (points < std::max(options.min_points, 3)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("not enough epochs yet (%d of %d evaluations)", points,
                        std::max(options.min_points, 3)));
  }
  std::sort(curve.begin(), curve.end(),
            [](const CurvePoint& x, const CurvePoint& y) {
              return x.epoch < y.epoch;
            });
  const int last = curve.back().epoch;
  if (curve.front().epoch < 1 || budget < last) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "epochs %d..%d do not lie within the budget of %d epochs",
        curve.front().epoch, last, budget));
  }
  const std::vector<Basis> bases = MakeBases(curve);
  std::vector<double> measured;
  for (const CurvePoint& point : curve) measured.push_back(point.quality);
  double sse = 0;
  const Curve fitted = Fit(bases, measured, &sse);
  // Three parameters: the residuals say something about the noise only from
  // the fourth point on.
  const double residual_sd =
      points > 3 ? std::sqrt(sse / static_cast<double>(points - 3)) : 0;
  const double noise = std::max(options.noise_floor, residual_sd);

  // Each replicate: the fitted curve plus fresh noise on every measured
  // point, refitted, and its forecast of each epoch left; the final one
  // with the noise of its own evaluation (the quality that will be measured,
  // not the curve under it).
  const int replicates = std::max(options.replicates, 1);
  const int ahead = budget - last;
  std::vector<std::vector<double>> by_epoch(ahead,
                                            std::vector<double>(replicates));
  std::vector<double> finals(replicates);
  int reaching = 0;
  Normal normal(options.seed);
  std::vector<double> expected(points);
  for (int i = 0; i < points; ++i) expected[i] = fitted.At(curve[i].epoch);
  std::vector<double> y(points);
  for (int r = 0; r < replicates; ++r) {
    for (int i = 0; i < points; ++i) {
      y[i] = expected[i] + noise * normal.Next();
    }
    double unused = 0;
    const Curve replicate = Fit(bases, y, &unused);
    for (int k = 0; k < ahead; ++k) {
      by_epoch[k][r] = replicate.At(last + 1 + k);
    }
    finals[r] = replicate.At(budget);
    if (std::min(1.0, finals[r] + noise * normal.Next()) >= target) {
      ++reaching;
    }
  }

  v1::Forecast forecast;
  forecast.set_epoch(last);
  forecast.set_points(points);
  forecast.set_target(target);
  forecast.set_epochs(budget);
  forecast.set_probability(static_cast<double>(reaching) / replicates);
  forecast.set_final_quality(Median(finals));
  for (const CurvePoint& point : curve) {
    if (point.quality >= target) {
      forecast.set_reach_epoch(point.epoch);
      return forecast;
    }
  }
  for (int k = 0; k < ahead; ++k) {
    if (Median(by_epoch[k]) >= target) {
      forecast.set_reach_epoch(last + 1 + k);
      break;
    }
  }
  return forecast;
}

std::string ForecastText(const v1::Forecast& forecast) {
  const int percent =
      static_cast<int>(std::lround(forecast.probability() * 100));
  std::string text =
      forecast.reach_epoch() > 0
          ? absl::StrFormat("reaches %.4g by epoch %d, %d%% likely",
                            forecast.target(), forecast.reach_epoch(), percent)
          : absl::StrFormat("unlikely to reach %.4g (%d%%)", forecast.target(),
                            percent);
  absl::StrAppendFormat(&text, "; %.4g forecast after epoch %d of %d",
                        forecast.final_quality(), forecast.epoch(),
                        forecast.epochs());
  if (forecast.node_hours_saved() > 0) {
    absl::StrAppendFormat(&text, "; %.3g node-hours saved",
                          forecast.node_hours_saved());
  }
  return text;
}

bool IsHopeless(const v1::RunSpec& spec, const v1::Forecast& forecast) {
  return spec.abort_if_hopeless() > 0 && forecast.points() > 0 &&
         forecast.epoch() >= spec.min_epochs() &&
         forecast.epoch() < forecast.epochs() &&
         forecast.probability() < spec.abort_if_hopeless();
}

double NodeHoursLeft(const v1::Run& run, int after_epoch) {
  const int left = run.spec().epochs() - after_epoch;
  if (left <= 0 || run.epochs_size() == 0) return 0;
  double seconds = 0;
  for (const v1::EpochSummary& epoch : run.epochs()) seconds += epoch.seconds();
  const double mean = seconds / run.epochs_size();
  return run.spec().nodes() * left * mean / 3600.0;
}

}  // namespace hpcai500
