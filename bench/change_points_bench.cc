// The change-point detector (methodology/change_points.h) on many synthetic
// histories: precision and recall against known steps (with outliers and
// noise-only histories among them), how a slow drift is reported, and the
// run time of a whole-history search and of one append at 1,000 and 10,000
// points. Prints Markdown for bench/RESULTS.md.
//
// Usage: hpcai500-change-points-bench [HISTORIES]   (default 300)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "methodology/change_points.h"

namespace hpcai500 {
namespace {

// Normal noise by Box-Muller from mt19937_64 (the same on every platform).
double Normal(std::mt19937_64& rng) {
  const double u1 = (rng() + 1.0) / 18446744073709551616.0;
  const double u2 = rng() / 18446744073709551616.0;
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

double Uniform(std::mt19937_64& rng, double low, double high) {
  return low + (high - low) * (rng() / 18446744073709551616.0);
}

struct History {
  std::vector<double> values;
  std::vector<int> steps;  // the true change points
};

// `length` values around 1000 with 1% noise; 0 to 3 steps of 2% to 8% up or
// down, at least 20 apart and 10 from either end; one or two outliers of 5
// to 10 noise deviations that are not changes.
History MakeHistory(std::mt19937_64& rng, int length, int max_steps) {
  History history;
  const int steps = static_cast<int>(rng() % (max_steps + 1));
  while (static_cast<int>(history.steps.size()) < steps) {
    const int at = 10 + static_cast<int>(rng() % (length - 20));
    bool spaced = true;
    for (int other : history.steps) spaced &= std::abs(other - at) >= 20;
    if (spaced) history.steps.push_back(at);
  }
  std::sort(history.steps.begin(), history.steps.end());
  double level = 1000;
  size_t next = 0;
  for (int i = 0; i < length; ++i) {
    if (next < history.steps.size() && history.steps[next] == i) {
      const double pct = Uniform(rng, 2, 8) * (rng() % 2 ? 1 : -1);
      level *= 1 + pct / 100;
      ++next;
    }
    history.values.push_back(level + 0.01 * level * Normal(rng));
  }
  const int outliers = 1 + static_cast<int>(rng() % 2);
  for (int o = 0; o < outliers; ++o) {
    const int at = static_cast<int>(rng() % length);
    const double sign = rng() % 2 ? 1 : -1;
    history.values[at] += sign * Uniform(rng, 5, 10) * 0.01 * 1000;
  }
  return history;
}

struct Tally {
  int true_steps = 0;
  int found = 0;
  int matched = 0;            // found within kTolerance of a true step
  int noise_histories = 0;    // histories without a step
  int noise_with_change = 0;  // ...in which something was found
};

constexpr int kTolerance = 2;

void Score(const History& history, const std::vector<ChangePoint>& points,
           Tally& tally) {
  tally.true_steps += static_cast<int>(history.steps.size());
  tally.found += static_cast<int>(points.size());
  std::vector<bool> used(history.steps.size(), false);
  for (const ChangePoint& point : points) {
    for (size_t s = 0; s < history.steps.size(); ++s) {
      if (!used[s] && std::abs(history.steps[s] - point.index) <= kTolerance) {
        used[s] = true;
        ++tally.matched;
        break;
      }
    }
  }
  if (history.steps.empty()) {
    ++tally.noise_histories;
    if (!points.empty()) ++tally.noise_with_change;
  }
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

void Accuracy(int histories, int length) {
  std::mt19937_64 rng(2026);
  Tally tally;
  for (int h = 0; h < histories; ++h) {
    const History history = MakeHistory(rng, length, 3);
    Score(history, DetectChangePoints(history.values, ChangePointOptions()),
          tally);
  }
  std::printf(
      "| %d | %d | %d | %d | %d | %.3f | %.3f | %d / %d |\n", histories, length,
      tally.true_steps, tally.found, tally.matched,
      tally.found ? static_cast<double>(tally.matched) / tally.found : 1.0,
      tally.true_steps ? static_cast<double>(tally.matched) / tally.true_steps
                       : 1.0,
      tally.noise_with_change, tally.noise_histories);
}

// A slide of 10% over `length` values with 1% noise: how many changes, in
// which direction, how many marked gradual.
void Drift(int histories, int length) {
  std::mt19937_64 rng(7);
  int with_change = 0, changes = 0, downward = 0, gradual = 0;
  for (int h = 0; h < histories; ++h) {
    std::vector<double> values;
    for (int i = 0; i < length; ++i) {
      const double level = 1000 * (1 - 0.10 * i / (length - 1));
      values.push_back(level + 10 * Normal(rng));
    }
    const std::vector<ChangePoint> points =
        DetectChangePoints(values, ChangePointOptions());
    with_change += !points.empty();
    for (const ChangePoint& point : points) {
      ++changes;
      downward += point.change < 0;
      gradual += point.gradual;
    }
  }
  std::printf("| %d | %d | %d | %d | %d | %d |\n", histories, length,
              with_change, changes, downward, gradual);
}

void Timing(int length) {
  std::mt19937_64 rng(99);
  const History history = MakeHistory(rng, length, std::max(3, length / 200));
  auto start = std::chrono::steady_clock::now();
  const std::vector<ChangePoint> points =
      DetectChangePoints(history.values, ChangePointOptions());
  const double whole = Seconds(start);
  // Appends: the history less its last 100 values, then those one by one.
  ChangePointTracker tracker{ChangePointOptions()};
  tracker.Reset(
      std::vector<double>(history.values.begin(), history.values.end() - 100));
  start = std::chrono::steady_clock::now();
  for (size_t i = history.values.size() - 100; i < history.values.size(); ++i) {
    tracker.Append(history.values[i]);
  }
  const double append = Seconds(start) / 100;
  // The worst case for an append: one long segment without a change.
  std::vector<double> flat;
  for (int i = 0; i < length; ++i) flat.push_back(1000 + 10 * Normal(rng));
  ChangePointTracker flat_tracker{ChangePointOptions()};
  flat_tracker.Reset(std::vector<double>(flat.begin(), flat.end() - 100));
  start = std::chrono::steady_clock::now();
  for (size_t i = flat.size() - 100; i < flat.size(); ++i) {
    flat_tracker.Append(flat[i]);
  }
  const double flat_append = Seconds(start) / 100;
  std::printf("| %d | %zu | %zu | %.3f | %.2f | %.2f |\n", length,
              history.steps.size(), points.size(), whole, append * 1e3,
              flat_append * 1e3);
}

}  // namespace
}  // namespace hpcai500

int main(int argc, char** argv) {
  const int histories = argc > 1 ? std::atoi(argv[1]) : 300;
  std::printf(
      "### Precision and recall (a change within %d of a true step matches)\n\n"
      "| histories | length | true steps | found | matched | precision | "
      "recall | noise-only histories with a change |\n"
      "|---|---|---|---|---|---|---|---|\n",
      hpcai500::kTolerance);
  hpcai500::Accuracy(histories, 100);
  hpcai500::Accuracy(histories, 200);
  std::printf(
      "\n### A slow drift of -10%% (1%% noise)\n\n"
      "| histories | length | with a change | changes | downward | gradual "
      "|\n|---|---|---|---|---|---|\n");
  hpcai500::Drift(histories / 3, 100);
  hpcai500::Drift(histories / 3, 200);
  std::printf(
      "\n### Run time\n\n"
      "| points | true steps | found | whole history s | append ms (with "
      "steps) | append ms (one long segment) |\n|---|---|---|---|---|---|\n");
  hpcai500::Timing(1000);
  hpcai500::Timing(10000);
  return 0;
}
