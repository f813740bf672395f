// E-Divisive means with a permutation test: the scan of a segment's splits
// in O(n log n) (a Fenwick tree over the values' ranks), the seeded
// permutation test, the bisection, and the sizes of the changes found.
#include "methodology/change_points.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

namespace hpcai500 {
namespace {

// SplitMix64's finaliser: spreads a seed and a segment's bounds over 64 bits.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform integer in [0, bound] by rejection: std::uniform_int_distribution
// and std::shuffle differ between standard libraries, mt19937_64 does not.
uint64_t UniformUpTo(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t range = bound + 1;
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % range;
  uint64_t draw;
  do {
    draw = rng();
  } while (draw >= limit);
  return draw % range;
}

void Shuffle(std::vector<int>& items, std::mt19937_64& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[UniformUpTo(rng, i - 1)]);
  }
}

// Counts and sums of the values inserted so far, by rank.
class FenwickTree {
 public:
  explicit FenwickTree(int size) : count_(size + 1), sum_(size + 1) {}

  void Clear() {
    std::fill(count_.begin(), count_.end(), 0);
    std::fill(sum_.begin(), sum_.end(), 0.0);
  }
  void Add(int rank, double value) {
    for (int i = rank + 1; i < static_cast<int>(count_.size()); i += i & -i) {
      ++count_[i];
      sum_[i] += value;
    }
  }
  // The count and the sum of the values inserted with a rank below `rank`.
  std::pair<int, double> Below(int rank) const {
    int count = 0;
    double sum = 0;
    for (int i = rank; i > 0; i -= i & -i) {
      count += count_[i];
      sum += sum_[i];
    }
    return {count, sum};
  }

 private:
  std::vector<int> count_;
  std::vector<double> sum_;
};

struct Split {
  int at = -1;  // the first index of the right side, in the segment
  double statistic = 0;
};

// The splits of one segment's values, in the order given or any
// permutation of it. The sum of |x - x'| from each value to all others
// does not depend on the order, so it is computed once.
class SegmentScanner {
 public:
  SegmentScanner(const double* values, int n, int min_segment)
      : n_(n), min_segment_(min_segment), ranks_(n), sorted_(n), tree_(n) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return values[a] < values[b]; });
    for (int r = 0; r < n; ++r) {
      ranks_[order[r]] = r;
      sorted_[r] = values[order[r]];
    }
    // distance_[r]: sum over j of |sorted_[r] - sorted_[j]|.
    distance_.resize(n);
    const double total = std::accumulate(sorted_.begin(), sorted_.end(), 0.0);
    double below = 0;
    for (int r = 0; r < n; ++r) {
      const double above = total - below - sorted_[r];
      distance_[r] =
          (r * sorted_[r] - below) + (above - (n - 1 - r) * sorted_[r]);
      below += sorted_[r];
    }
    within_all_ = std::accumulate(distance_.begin(), distance_.end(), 0.0) / 2;
  }

  // The values' ranks in their own order (permute these to permute them).
  const std::vector<int>& ranks() const { return ranks_; }

  // The best split of the values whose ranks are `ranks`, in that order.
  Split Best(const std::vector<int>& ranks) {
    tree_.Clear();
    Split best;
    double within_left = 0, within_right = within_all_, sum_left = 0;
    for (int t = 0; t + 1 < n_; ++t) {
      const int r = ranks[t];
      const double v = sorted_[r];
      const auto [count_below, sum_below] = tree_.Below(r);
      const double to_left = (count_below * v - sum_below) +
                             ((sum_left - sum_below) - (t - count_below) * v);
      within_left += to_left;
      within_right -= distance_[r] - to_left;
      tree_.Add(r, v);
      sum_left += v;
      const int m = t + 1, k = n_ - m;
      if (m < min_segment_ || k < min_segment_) continue;
      const double between = within_all_ - within_left - within_right;
      const double q = (static_cast<double>(m) * k / (m + k)) *
                       (2 * between / (static_cast<double>(m) * k) -
                        within_left / (m * (m - 1) / 2.0) -
                        within_right / (k * (k - 1) / 2.0));
      if (best.at < 0 || q > best.statistic) best = {m, q};
    }
    return best;
  }

 private:
  const int n_;
  const int min_segment_;
  std::vector<int> ranks_;
  std::vector<double> sorted_;
  std::vector<double> distance_;
  double within_all_ = 0;
  FenwickTree tree_;
};

struct TestedSplit {
  Split split;
  double p_value = 1;
};

// The best split of values[start, end) and its permutation p-value. Stops
// permuting once enough permutations reached the observed statistic that
// the split cannot be significant (its p-value is then a lower bound).
TestedSplit TestSegment(const std::vector<double>& values, int start, int end,
                        const ChangePointOptions& options) {
  const int n = end - start;
  SegmentScanner scanner(values.data() + start, n, options.min_segment);
  TestedSplit tested;
  tested.split = scanner.Best(scanner.ranks());
  if (tested.split.at < 0) return tested;
  const int permutations = std::max(options.permutations, 1);
  // More than this many reaching the statistic: p > significance.
  const int allowed =
      static_cast<int>(std::floor(options.significance * (permutations + 1))) -
      1;
  std::mt19937_64 rng(
      Mix(options.seed ^ Mix((static_cast<uint64_t>(start) << 32) |
                             static_cast<uint32_t>(end))));
  std::vector<int> ranks = scanner.ranks();
  int reached = 0, done = 0;
  while (done < permutations) {
    Shuffle(ranks, rng);
    ++done;
    if (scanner.Best(ranks).statistic >= tested.split.statistic) {
      if (++reached > allowed) break;
    }
  }
  tested.p_value = (1.0 + reached) / (1.0 + permutations);
  return tested;
}

struct Moments {
  double mean = 0;
  double variance = 0;  // the sample variance; 0 below two values
};

Moments MomentsOf(const std::vector<double>& values, int start, int end) {
  Moments moments;
  const int n = end - start;
  if (n <= 0) return moments;
  moments.mean =
      std::accumulate(values.begin() + start, values.begin() + end, 0.0) / n;
  if (n < 2) return moments;
  double squares = 0;
  for (int i = start; i < end; ++i) {
    squares += (values[i] - moments.mean) * (values[i] - moments.mean);
  }
  moments.variance = squares / (n - 1);
  return moments;
}

// The residual sum of squares of the least-squares line through
// values[start, end) against their indexes.
double LineResidual(const std::vector<double>& values, int start, int end) {
  const double mean_y = MomentsOf(values, start, end).mean;
  const double mean_x = (start + end - 1) / 2.0;
  double sxy = 0, sxx = 0, syy = 0;
  for (int i = start; i < end; ++i) {
    sxy += (i - mean_x) * (values[i] - mean_y);
    sxx += (i - mean_x) * (i - mean_x);
    syy += (values[i] - mean_y) * (values[i] - mean_y);
  }
  return sxx > 0 ? syy - sxy * sxy / sxx : syy;
}

ChangePoint Describe(const std::vector<double>& values, int before_start,
                     int index, int after_end, double statistic, double p_value,
                     double z) {
  ChangePoint point;
  point.index = index;
  point.statistic = statistic;
  point.p_value = p_value;
  point.before_start = before_start;
  point.after_end = after_end;
  const Moments before = MomentsOf(values, before_start, index);
  const Moments after = MomentsOf(values, index, after_end);
  point.mean_before = before.mean;
  point.mean_after = after.mean;
  point.change = after.mean - before.mean;
  const double error = std::sqrt(before.variance / (index - before_start) +
                                 after.variance / (after_end - index));
  point.change_low = point.change - z * error;
  point.change_high = point.change + z * error;
  if (before.mean != 0) {
    const double scale = 100 / std::abs(before.mean);
    point.change_pct = point.change * scale;
    point.change_pct_low = point.change_low * scale;
    point.change_pct_high = point.change_high * scale;
  }
  // Two parameters each: one line through both segments, or a level on
  // each side. A drift fits the line better, a step the levels.
  const double step_residual = before.variance * (index - before_start - 1) +
                               after.variance * (after_end - index - 1);
  point.gradual = LineResidual(values, before_start, after_end) < step_residual;
  return point;
}

// The bisection cuts a slide into a staircase of changes in one direction
// (each split picked where the noise looks most like a step, so the line
// test of Describe alone misses some): three or more in a row are a drift.
void MarkStaircases(std::vector<ChangePoint>& points) {
  constexpr size_t kStaircase = 3;
  size_t run_start = 0;
  for (size_t i = 1; i <= points.size(); ++i) {
    const bool continues = i < points.size() &&
                           (points[i].change < 0) == (points[i - 1].change < 0);
    if (continues) continue;
    if (i - run_start >= kStaircase) {
      for (size_t j = run_start; j < i; ++j) points[j].gradual = true;
    }
    run_start = i;
  }
}

}  // namespace

double EDivisiveStatistic(const std::vector<double>& values, int split) {
  const int n = static_cast<int>(values.size());
  const int m = split, k = n - split;
  if (m < 2 || k < 2) return 0;
  double between = 0, left = 0, right = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const double d = std::abs(values[i] - values[j]);
      if (j < split) {
        left += d;
      } else if (i >= split) {
        right += d;
      } else {
        between += d;
      }
    }
  }
  return (static_cast<double>(m) * k / (m + k)) *
         (2 * between / (static_cast<double>(m) * k) -
          left / (m * (m - 1) / 2.0) - right / (k * (k - 1) / 2.0));
}

std::vector<ChangePoint> DetectChangePoints(const std::vector<double>& values,
                                            const ChangePointOptions& options) {
  ChangePointTracker tracker(options);
  tracker.Reset(values);
  return tracker.ChangePoints();
}

ChangePointTracker::ChangePointTracker(const ChangePointOptions& options)
    : options_([&] {
        ChangePointOptions checked = options;
        checked.min_segment = std::max(checked.min_segment, 2);
        return checked;
      }()) {}

void ChangePointTracker::Reset(std::vector<double> values) {
  values_ = std::move(values);
  found_.clear();
  Search(0, static_cast<int>(values_.size()));
}

std::vector<ChangePoint> ChangePointTracker::Append(double value) {
  values_.push_back(value);
  const int n = static_cast<int>(values_.size());
  const size_t known = found_.size();
  // The last segment is searched again; while fewer than kSettle minimum
  // segments follow the last change point, so is the segment before it, so
  // that a change found as soon as it could be is moved to where the values
  // after it put it.
  constexpr int kSettle = 3;
  size_t keep = found_.size();
  if (!found_.empty() &&
      n - found_.back().index < kSettle * options_.min_segment) {
    --keep;
  }
  found_.resize(keep);
  Search(keep == 0 ? 0 : found_.back().index, n);
  // What the search found lies after every change point kept, so it sorts
  // to the end; those beyond the count known before are new.
  std::vector<ChangePoint> points = ChangePoints();
  const size_t fresh = points.size() > known ? points.size() - known : 0;
  return std::vector<ChangePoint>(points.end() - fresh, points.end());
}

void ChangePointTracker::Search(int start, int end) {
  // An explicit stack: a long history with many changes would recurse deep.
  std::vector<std::pair<int, int>> pending = {{start, end}};
  while (!pending.empty()) {
    const auto [from, to] = pending.back();
    pending.pop_back();
    if (to - from < 2 * options_.min_segment) continue;
    const TestedSplit tested = TestSegment(values_, from, to, options_);
    if (tested.split.at < 0 || tested.p_value > options_.significance) continue;
    const int index = from + tested.split.at;
    found_.push_back({index, tested.split.statistic, tested.p_value});
    pending.push_back({from, index});
    pending.push_back({index, to});
  }
  std::sort(found_.begin(), found_.end(),
            [](const Found& a, const Found& b) { return a.index < b.index; });
}

std::vector<ChangePoint> ChangePointTracker::ChangePoints() const {
  std::vector<ChangePoint> points;
  points.reserve(found_.size());
  const int n = static_cast<int>(values_.size());
  for (size_t i = 0; i < found_.size(); ++i) {
    const int before_start = i == 0 ? 0 : found_[i - 1].index;
    const int after_end = i + 1 < found_.size() ? found_[i + 1].index : n;
    points.push_back(Describe(values_, before_start, found_[i].index, after_end,
                              found_[i].statistic, found_[i].p_value,
                              options_.z));
  }
  MarkStaircases(points);
  return points;
}

}  // namespace hpcai500
