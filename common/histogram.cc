#include "common/histogram.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hpcai500 {
namespace {

// A bound as Prometheus clients print it: shortest round trip ("0.005",
// "2.5", "10").
std::string FormatBound(double bound) { return absl::StrCat(bound); }

std::string Braced(absl::string_view labels, absl::string_view more) {
  if (labels.empty() && more.empty()) return "";
  if (labels.empty()) return absl::StrCat("{", more, "}");
  if (more.empty()) return absl::StrCat("{", labels, "}");
  return absl::StrCat("{", labels, ",", more, "}");
}

}  // namespace

std::vector<double> LatencyBoundsSeconds() {
  return {0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,     2.5,  5,     10};
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) -
      bounds_.begin());
  absl::MutexLock lock(&mu_);
  ++buckets_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.bounds = bounds_;
  absl::MutexLock lock(&mu_);
  uint64_t running = 0;
  for (uint64_t in_bucket : buckets_) {
    running += in_bucket;
    snapshot.counts.push_back(running);
  }
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

void AppendHistogramText(absl::string_view name, absl::string_view labels,
                         const Histogram::Snapshot& snapshot,
                         std::string* out) {
  for (size_t i = 0; i < snapshot.counts.size(); ++i) {
    const std::string le = i < snapshot.bounds.size()
                               ? FormatBound(snapshot.bounds[i])
                               : std::string("+Inf");
    absl::StrAppend(out, name, "_bucket",
                    Braced(labels, PrometheusLabel("le", le)), " ",
                    snapshot.counts[i], "\n");
  }
  absl::StrAppend(out, name, "_sum", Braced(labels, ""), " ",
                  absl::StrCat(snapshot.sum), "\n", name, "_count",
                  Braced(labels, ""), " ", snapshot.count, "\n");
}

std::string PrometheusLabel(absl::string_view key, absl::string_view value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '"') {
      escaped += "\\\"";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  return absl::StrCat(key, "=\"", escaped, "\"");
}

}  // namespace hpcai500
