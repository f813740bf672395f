#include "common/histogram.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(Histogram, CountsEachObservationInEveryBucketAtOrAboveIt) {
  Histogram histogram({0.1, 1, 10});
  for (double value : {0.05, 0.1, 0.5, 3.0, 100.0}) histogram.Observe(value);
  const Histogram::Snapshot snapshot = histogram.Read();
  EXPECT_EQ(snapshot.counts, (std::vector<uint64_t>{2, 3, 4, 5}))
      << "0.1 itself falls in le=0.1; 100 only in +Inf";
  EXPECT_DOUBLE_EQ(snapshot.sum, 103.65);
  EXPECT_EQ(snapshot.count, 5u);
}

TEST(Histogram, WritesPrometheusTextExactly) {
  Histogram histogram({0.005, 2.5});
  histogram.Observe(0.001);
  histogram.Observe(3);
  std::string text;
  AppendHistogramText("x_seconds", "route=\"/a\",method=\"GET\"",
                      histogram.Read(), &text);
  EXPECT_EQ(text,
            "x_seconds_bucket{route=\"/a\",method=\"GET\",le=\"0.005\"} 1\n"
            "x_seconds_bucket{route=\"/a\",method=\"GET\",le=\"2.5\"} 1\n"
            "x_seconds_bucket{route=\"/a\",method=\"GET\",le=\"+Inf\"} 2\n"
            "x_seconds_sum{route=\"/a\",method=\"GET\"} 3.001\n"
            "x_seconds_count{route=\"/a\",method=\"GET\"} 2\n");
}

TEST(Histogram, WithoutLabelsWritesBareNamesAndAnEmptyOneIsZero) {
  Histogram histogram({1});
  std::string text;
  AppendHistogramText("lag_seconds", "", histogram.Read(), &text);
  EXPECT_EQ(text,
            "lag_seconds_bucket{le=\"1\"} 0\n"
            "lag_seconds_bucket{le=\"+Inf\"} 0\n"
            "lag_seconds_sum 0\n"
            "lag_seconds_count 0\n");
}

TEST(Histogram, LabelValuesAreEscaped) {
  EXPECT_EQ(PrometheusLabel("route", "a\"b\\c\nd"),
            "route=\"a\\\"b\\\\c\\nd\"");
}

TEST(Histogram, ConcurrentObservationsAreAllCounted) {
  Histogram histogram;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) histogram.Observe(0.002);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(histogram.Read().count, 4000u);
  EXPECT_EQ(histogram.Read().counts.back(), 4000u);
}

TEST(Histogram, LatencyBoundsIncrease) {
  const std::vector<double> bounds = LatencyBoundsSeconds();
  for (size_t i = 1; i < bounds.size(); ++i)
    EXPECT_LT(bounds[i - 1], bounds[i]);
}

}  // namespace
}  // namespace hpcai500
