// `hpcai500 regress`: judging a finished run against a baseline for nightly
// CI. The metrics a run is judged by, the baseline (the median of a series of
// earlier runs of the same benchmark, one run, or fixed reference values),
// the verdict per metric, and the reports: a table, JSON and JUnit XML.
// Pure functions; the RPCs are in Commands::Regress.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_REGRESS_H_
#define HPCAI500_CLI_REGRESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// Higher is better for every metric.
enum class RegressMetric {
  kThroughput,  // samples / train_seconds
  kFlops,
  kValidFlops,
  kQuality,
};

// "throughput", "flops", "valid_flops", "quality".
std::string RegressMetricName(RegressMetric metric);
// InvalidArgument naming the metric and the known ones for any other name.
absl::StatusOr<RegressMetric> ParseRegressMetric(absl::string_view name);
// The metric's value in a score (throughput 0 without training time).
double RegressMetricValue(const v1::Score& score, RegressMetric metric);

// What `regress` was asked on its command line.
struct RegressOptions {
  int window = 5;            // newest runs of the series the median takes
  int64_t baseline_run = 0;  // > 0: judge against this run, not the series
  // Fixed baseline values (ReFrame-style references); they replace the runs
  // for their metrics, and their metrics are judged even without --metric.
  std::map<RegressMetric, double> references;
  double tolerance_pct = 5;  // a drop of more than this percent regresses
  std::vector<RegressMetric>
      metrics;             // empty: throughput, valid_flops, quality
  std::string junit_path;  // empty: no JUnit file
};

// Parsers of the flag values; InvalidArgument naming the problem.
// "--window": an integer >= 1.
absl::StatusOr<int> ParseRegressWindow(absl::string_view text);
// "--tolerance": a finite percentage >= 0.
absl::StatusOr<double> ParseRegressTolerance(absl::string_view text);
// "--reference METRIC=VALUE" into options.references (each metric once).
absl::Status AddRegressReference(absl::string_view text,
                                 RegressOptions& options);

// Whether two runs belong to one series: the same spec name and shape
// (workload, config, level, nodes, ranks per node, device, batch size,
// precision, compression, epochs, system); seed and repetitions may differ.
bool SameRegressSeries(const v1::RunSpec& a, const v1::RunSpec& b);

// The series baseline of `spec` among `runs` (any order): the runs of the
// same series that succeeded with a score, the newest (highest id) `window`
// of them, newest first.
std::vector<v1::Run> SelectRegressSeries(const std::vector<v1::Run>& runs,
                                         const v1::RunSpec& spec, int window);

// The median; 0 for none.
double Median(std::vector<double> values);

enum class RegressVerdict { kNoBaseline, kOk, kRegressed, kImproved };

struct MetricComparison {
  RegressMetric metric = RegressMetric::kThroughput;
  std::optional<double> baseline;    // empty: nothing to compare with
  bool from_reference = false;       // else from the report's baseline runs
  double value = 0;                  // this run (median over repetitions)
  std::optional<double> change_pct;  // empty without a positive baseline
  RegressVerdict verdict = RegressVerdict::kNoBaseline;
  std::string reason;  // why, for kRegressed
};

struct RegressReport {
  std::string name;                    // the spec name
  std::vector<int64_t> run_ids;        // this submission's runs
  std::vector<int64_t> baseline_runs;  // newest first; empty: none yet
  bool baseline_is_series = true;      // else one run named by --baseline
  double tolerance_pct = 5;
  std::vector<MetricComparison> metrics;
  // Set when a run of this submission did not finish with a score; then
  // nothing is compared.
  std::string error;

  bool regressed() const;
};

// Compares `current` (this submission's runs, all succeeded with a score)
// with `baseline` (runs succeeded with a score; may be empty) per metric. A
// metric regresses when it dropped by more than the tolerance from the
// median of the baseline runs or from its reference; it improved when it
// rose by more. Quality also regresses when most baseline runs reached
// their target and most of `current` did not (not for a quality reference).
RegressReport CompareRegress(const std::vector<v1::Run>& current,
                             const std::vector<v1::Run>& baseline,
                             const RegressOptions& options);

// "ok", "REGRESSED", "improved", "no baseline".
std::string RegressVerdictName(RegressVerdict verdict);

// The table (metric, baseline, from, this run, change, verdict) and a
// closing line: the regressed metrics, or "no regression", and "no
// baseline: run N starts the series" when there were no baseline runs.
std::string FormatRegressReport(const RegressReport& report);
// The same as one indented JSON object.
std::string RegressReportJson(const RegressReport& report);
// A JUnit XML <testsuite>: one <testcase> per metric with a <failure> for
// each regression, or one "run" testcase with an <error> for report.error.
std::string RegressJUnitXml(const RegressReport& report);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_H_
