// The robust outlier rule and the straggler rule over it: see outliers.h.
#include "methodology/outliers.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "methodology/regress_band.h"

namespace hpcai500 {
namespace {

// 0.6745 = the standard normal's third quartile: z is then in standard
// deviations for normal data.
constexpr double kMadToZ = 0.6745;

}  // namespace

std::optional<Deviation> Deviate(double value,
                                 const std::vector<double>& sample,
                                 const OutlierRule& rule) {
  if (sample.size() < rule.min_sample) return std::nullopt;
  const double median = Median(sample);
  if (median == 0 || !std::isfinite(median) || !std::isfinite(value)) {
    return std::nullopt;
  }
  Deviation d;
  d.value = value;
  d.median = median;
  d.mad = std::max(MedianAbsoluteDeviation(sample),
                   rule.mad_floor * std::fabs(median));
  d.z = d.mad > 0 ? kMadToZ * (value - median) / d.mad : 0;
  d.relative_change = (value - median) / std::fabs(median);
  d.sample = sample.size();
  return d;
}

bool IsOutlier(const Deviation& d, BadSide bad, const OutlierRule& rule) {
  const double sign = bad == BadSide::kHigh ? 1.0 : -1.0;
  return sign * d.z > rule.z_threshold &&
         sign * d.relative_change >= rule.min_relative_change;
}

std::string DeviationText(const Deviation& d, const std::string& unit) {
  return absl::StrFormat("%+.0f%% (z %+.1f) against the median %.4g%s of %d",
                         100 * d.relative_change, d.z, d.median,
                         unit.empty() ? "" : " " + unit,
                         static_cast<int>(d.sample));
}

std::vector<Straggler> FindStragglers(const std::vector<RankEpochTime>& times,
                                      const OutlierRule& rule, int min_epochs) {
  // epoch -> rank -> seconds per sample
  std::map<int, std::map<int, double>> by_epoch;
  for (const RankEpochTime& t : times) {
    by_epoch[t.epoch][t.rank] = t.seconds_per_sample;
  }
  std::map<int, Straggler> found;  // by rank
  int judged = 0;
  for (const auto& [epoch, ranks] : by_epoch) {
    if (ranks.size() < rule.min_sample) continue;
    ++judged;
    std::vector<double> sample;
    for (const auto& [rank, seconds] : ranks) sample.push_back(seconds);
    for (const auto& [rank, seconds] : ranks) {
      std::optional<Deviation> d = Deviate(seconds, sample, rule);
      if (!d.has_value() || !IsOutlier(*d, BadSide::kHigh, rule)) continue;
      Straggler& s = found[rank];
      s.rank = rank;
      if (s.slow_epochs == 0 || d->relative_change > s.worst.relative_change) {
        s.worst = *d;
      }
      ++s.slow_epochs;
    }
  }
  std::vector<Straggler> out;
  for (auto& [rank, s] : found) {
    s.epochs = judged;
    if (s.slow_epochs >= min_epochs && 2 * s.slow_epochs >= judged) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace hpcai500
