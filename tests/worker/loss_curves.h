// How closely a bf16 run's losses must follow a reference run's from the
// same seed and batches (the fused batch norm, the captured step): the two
// round differently, and the difference grows through the steps as the
// weights drift apart, so a fixed band on every step flakes. The first
// points, where the weights have had only a few steps to drift, are held
// tightly; the rest to a loose band; and a curve that should fall is held
// to fall on average, not step by step. Header-only GoogleTest helpers.
//
// Thread-safe: pure functions (GoogleTest's assertions aside).
#ifndef HPCAI500_TESTS_WORKER_LOSS_CURVES_H_
#define HPCAI500_TESTS_WORKER_LOSS_CURVES_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

namespace hpcai500::testing {

struct CurveTolerance {
  size_t tight_points = 3;  // the first ones, held to `tight`
  double tight = 0.02;      // relative to the reference's value
  double loose = 0.10;      // the points after them
};

// Each point of `got` near the same point of `want`, relative to it;
// `what` names a point in the messages ("step", "epoch"), counted from 1.
inline void ExpectFollows(const std::vector<double>& want,
                          const std::vector<double>& got,
                          const CurveTolerance& tolerance,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const double band =
        i < tolerance.tight_points ? tolerance.tight : tolerance.loose;
    EXPECT_NEAR(got[i], want[i], band * std::abs(want[i]))
        << what << " " << i + 1 << " (band " << band * 100 << "%)";
  }
}

// The mean of the last quarter of `losses` (at least one point) below the
// mean of the first quarter.
inline void ExpectFalls(const std::vector<double>& losses,
                        const std::string& what) {
  ASSERT_GE(losses.size(), 2u) << what;
  const size_t quarter = std::max<size_t>(1, losses.size() / 4);
  auto mean = [&](auto begin) {
    return std::accumulate(begin, begin + quarter, 0.0) / quarter;
  };
  EXPECT_LT(mean(losses.end() - quarter), mean(losses.begin()))
      << what << ": the last " << quarter << " losses do not fall below the "
      << "first " << quarter;
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_WORKER_LOSS_CURVES_H_
