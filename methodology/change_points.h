// Change points of a benchmark metric's history (docs/design.md "Change
// points"): E-Divisive means (Matteson & James 2014) with alpha = 1 on
// |x - y|, found by bisection and kept only when a permutation test with a
// fixed seed finds them significant, each at least a minimum segment length
// from its neighbours so that one outlier is not a change. Each change
// carries its size with a normal (Welch) confidence interval on the
// difference of the means of the segments beside it, and whether it is a
// step or part of a slow drift.
//
// Std-only and deterministic: the same values and options give the same
// change points, on any platform (the permutations draw from mt19937_64,
// whose output the standard fixes, through a shuffle written here).
//
// Thread-safe: the free functions. ChangePointTracker is not: one thread
// drives it (the coordinator holds it under its own mutex).
#ifndef HPCAI500_METHODOLOGY_CHANGE_POINTS_H_
#define HPCAI500_METHODOLOGY_CHANGE_POINTS_H_

#include <cstdint>
#include <vector>

namespace hpcai500 {

struct ChangePointOptions {
  // The fewest values a segment may hold; at least 2 (the statistic needs
  // two values a side). One outlier cannot make a segment of its own.
  int min_segment = 5;
  // Permutations behind each significance test.
  int permutations = 199;
  // The largest p-value a change point may have: p = (1 + permutations
  // whose statistic reached the observed one) / (1 + permutations).
  double significance = 0.01;
  // Seeds every permutation test (mixed with the segment's bounds, so a
  // segment's test does not depend on the order segments are tested in).
  uint64_t seed = 1;
  // The two-sided normal quantile of the change's confidence interval
  // (1.96: 95%).
  double z = 1.959963984540054;
};

// One change point: where the new level starts and how big the move is.
struct ChangePoint {
  int index = 0;         // the first value after the change
  double statistic = 0;  // E-Divisive's q at the split
  double p_value = 1;    // of the permutation test that kept it
  // The segments beside it: [before_start, index) and [index, after_end).
  int before_start = 0;
  int after_end = 0;
  double mean_before = 0;
  double mean_after = 0;
  // mean_after - mean_before with its normal (Welch) interval.
  double change = 0;
  double change_low = 0;
  double change_high = 0;
  // The same in percent of mean_before; 0 when mean_before is 0.
  double change_pct = 0;
  double change_pct_low = 0;
  double change_pct_high = 0;
  // A slow drift rather than a step: one least-squares line through both
  // segments leaves a smaller residual than a level on each side (the same
  // number of parameters), so the level slid across the change instead of
  // jumping; or one of three or more changes in a row in one direction,
  // the staircase the bisection cuts a slide into.
  bool gradual = false;
};

// The q statistic of E-Divisive means (alpha = 1) for splitting `values`
// at `split` (left [0, split), right [split, n)): m k / (m + k) times
// (2/(m k) sum |x - y| - mean within-left |x - x'| - mean within-right
// |y - y'|). Both sides need two values; 0 otherwise. O(n^2): for tests.
double EDivisiveStatistic(const std::vector<double>& values, int split);

// The change points of `values` (oldest first) by bisection: the best
// split of a segment (the largest q with both sides at least min_segment)
// is kept when its permutation test's p-value is at most `significance`;
// then both sides are searched the same way. Sorted by index.
std::vector<ChangePoint> DetectChangePoints(const std::vector<double>& values,
                                            const ChangePointOptions& options);

// A series' change points kept as values arrive: Reset runs the bisection
// over a whole history; Append adds one value and searches only the last
// segment (from the last change point on), so an append costs one
// segment's search, not the history's. The last change point is
// provisional while fewer than 3 x min_segment values follow it: an append
// then searches the two last segments again, so it may move (a change is
// found as soon as min_segment values follow it, when its place is least
// sure) or go. Earlier change points stay. The sizes and intervals are
// recomputed from the current segments on every read. A tracker fed by
// Append can differ from Reset over the same values (a bisection over the
// whole history may split elsewhere); each is deterministic.
class ChangePointTracker {
 public:
  explicit ChangePointTracker(const ChangePointOptions& options);

  // Replaces the history with `values` and searches all of it.
  void Reset(std::vector<double> values);
  // Appends `value`; returns the change points this value added to the
  // count (none mostly; the newest ones), described as ChangePoints() would.
  std::vector<ChangePoint> Append(double value);

  const std::vector<double>& values() const { return values_; }
  // Every change point, sorted by index, sized against its neighbours.
  std::vector<ChangePoint> ChangePoints() const;

 private:
  struct Found {
    int index;
    double statistic;
    double p_value;
  };
  // Bisects [start, end), adding what it finds to found_.
  void Search(int start, int end);

  // Constant after construction.
  const ChangePointOptions options_;
  std::vector<double> values_;
  std::vector<Found> found_;  // sorted by index
};

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_CHANGE_POINTS_H_
