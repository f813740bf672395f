// A Prometheus histogram (cumulative counts of observations at or under each
// upper bound, their sum and count) and its text exposition, for /metrics:
// request latency, ingest lag and scheduler pass time.
//
// Thread-safe: Observe and Read may be called from any thread.
#ifndef HPCAI500_COMMON_HISTOGRAM_H_
#define HPCAI500_COMMON_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace hpcai500 {

// Upper bounds in seconds from 0.5 ms to 10 s: Prometheus client_golang's
// DefBuckets with 0.5 ms and 1 ms below them (an API read takes about 1 ms).
std::vector<double> LatencyBoundsSeconds();

class Histogram {
 public:
  // What the histogram holds at one moment. counts[i] counts observations
  // <= bounds[i]; counts.back() (one more than bounds) counts them all.
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // cumulative, the last is +Inf
    double sum = 0;
    uint64_t count = 0;
  };

  // `bounds` must be increasing and finite; +Inf is implied.
  explicit Histogram(std::vector<double> bounds = LatencyBoundsSeconds());

  void Observe(double value);
  Snapshot Read() const;

 private:
  // Constant after construction.
  const std::vector<double> bounds_;

  mutable absl::Mutex mu_;
  std::vector<uint64_t> buckets_ ABSL_GUARDED_BY(mu_);  // not cumulative
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Appends the series of `snapshot` as Prometheus text (version 0.0.4):
// NAME_bucket{LABELS,le="B"} for each bound and le="+Inf", NAME_sum{LABELS},
// NAME_count{LABELS}. `labels` is "" or pairs like route="/x",method="GET"
// (values escaped by PrometheusLabel). No HELP or TYPE line: a family of
// several label sets shares one.
void AppendHistogramText(absl::string_view name, absl::string_view labels,
                         const Histogram::Snapshot& snapshot, std::string* out);

// key="value" with the value escaped as the text format asks (\\, \" and
// \n).
std::string PrometheusLabel(absl::string_view key, absl::string_view value);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_HISTOGRAM_H_
