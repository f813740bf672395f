#include "cli/regress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/format.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

constexpr RegressMetric kAllMetrics[] = {
    RegressMetric::kThroughput, RegressMetric::kFlops,
    RegressMetric::kValidFlops, RegressMetric::kQuality};
constexpr RegressMetric kDefaultMetrics[] = {RegressMetric::kThroughput,
                                             RegressMetric::kValidFlops,
                                             RegressMetric::kQuality};

std::string KnownMetricNames() {
  std::vector<std::string> names;
  for (RegressMetric metric : kAllMetrics) {
    names.push_back(RegressMetricName(metric));
  }
  return absl::StrJoin(names, ", ");
}

// Whether more than half of `runs` reached their target.
bool MostReachedTarget(const std::vector<v1::Run>& runs) {
  size_t reached = std::count_if(
      runs.begin(), runs.end(),
      [](const v1::Run& run) { return run.score().reached_target(); });
  return !runs.empty() && 2 * reached > runs.size();
}

double MedianOf(const std::vector<v1::Run>& runs, RegressMetric metric) {
  std::vector<double> values;
  for (const v1::Run& run : runs) {
    values.push_back(RegressMetricValue(run.score(), metric));
  }
  return Median(std::move(values));
}

// The metrics judged: the asked ones (or the defaults), then any other one
// that has a reference.
std::vector<RegressMetric> JudgedMetrics(const RegressOptions& options) {
  std::vector<RegressMetric> metrics = options.metrics;
  if (metrics.empty()) {
    metrics.assign(std::begin(kDefaultMetrics), std::end(kDefaultMetrics));
  }
  for (const auto& [metric, value] : options.references) {
    if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      metrics.push_back(metric);
    }
  }
  return metrics;
}

// Sets the change from the baseline and the verdict it earns.
void Judge(MetricComparison& comparison, double tolerance_pct) {
  if (!comparison.baseline.has_value()) {
    comparison.verdict = RegressVerdict::kNoBaseline;
    return;
  }
  const double baseline = *comparison.baseline;
  if (baseline > 0) {
    // Multiplied first so that round percentages stay exact (95 vs 100: -5).
    comparison.change_pct = (comparison.value - baseline) * 100 / baseline;
  }
  comparison.verdict = RegressVerdict::kOk;
  if (!comparison.change_pct.has_value()) {
    if (comparison.value > baseline) {
      comparison.verdict = RegressVerdict::kImproved;
    }
  } else if (-*comparison.change_pct > tolerance_pct) {
    comparison.verdict = RegressVerdict::kRegressed;
    comparison.reason =
        absl::StrFormat("dropped %.1f%%, more than the %g%% tolerance",
                        -*comparison.change_pct, tolerance_pct);
  } else if (*comparison.change_pct > tolerance_pct) {
    comparison.verdict = RegressVerdict::kImproved;
  }
}

std::string FormatMetricValue(RegressMetric metric, double value) {
  switch (metric) {
    case RegressMetric::kThroughput:
      return absl::StrFormat("%.1f samples/s", value);
    case RegressMetric::kFlops:
    case RegressMetric::kValidFlops:
      return FormatFlops(value);
    case RegressMetric::kQuality:
      return absl::StrFormat("%.4f", value);
  }
  return absl::StrCat(value);
}

std::string RunList(const std::vector<int64_t>& ids) {
  return absl::StrCat(ids.size() == 1 ? "run " : "runs ",
                      absl::StrJoin(ids, ", "));
}

std::string BaselineSource(const RegressReport& report,
                           const MetricComparison& comparison) {
  if (!comparison.baseline.has_value()) return "-";
  if (comparison.from_reference) return "reference";
  return RunList(report.baseline_runs);
}

std::string NoBaselineLine(const RegressReport& report) {
  return absl::StrCat("no baseline: ", RunList(report.run_ids),
                      report.run_ids.size() == 1 ? " starts" : " start",
                      " the series");
}

// The verdict as a JSON value: lower case like the other values.
std::string JsonVerdictName(RegressVerdict verdict) {
  switch (verdict) {
    case RegressVerdict::kNoBaseline:
      return "no_baseline";
    case RegressVerdict::kOk:
      return "ok";
    case RegressVerdict::kRegressed:
      return "regressed";
    case RegressVerdict::kImproved:
      return "improved";
  }
  return "unknown";
}

std::string XmlEscape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string RegressMetricName(RegressMetric metric) {
  switch (metric) {
    case RegressMetric::kThroughput:
      return "throughput";
    case RegressMetric::kFlops:
      return "flops";
    case RegressMetric::kValidFlops:
      return "valid_flops";
    case RegressMetric::kQuality:
      return "quality";
  }
  return "unknown";
}

absl::StatusOr<RegressMetric> ParseRegressMetric(absl::string_view name) {
  for (RegressMetric metric : kAllMetrics) {
    if (name == RegressMetricName(metric)) return metric;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown metric '", name, "' (known: ", KnownMetricNames(), ")"));
}

double RegressMetricValue(const v1::Score& score, RegressMetric metric) {
  switch (metric) {
    case RegressMetric::kThroughput:
      return score.train_seconds() > 0
                 ? static_cast<double>(score.samples()) / score.train_seconds()
                 : 0;
    case RegressMetric::kFlops:
      return score.flops();
    case RegressMetric::kValidFlops:
      return score.valid_flops();
    case RegressMetric::kQuality:
      return score.quality();
  }
  return 0;
}

absl::StatusOr<int> ParseRegressWindow(absl::string_view text) {
  int window = 0;
  if (!absl::SimpleAtoi(text, &window) || window < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--window must be an integer of at least 1, got '", text, "'"));
  }
  return window;
}

absl::StatusOr<double> ParseRegressTolerance(absl::string_view text) {
  double tolerance = 0;
  if (!absl::SimpleAtod(text, &tolerance) || !std::isfinite(tolerance) ||
      tolerance < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tolerance must be a percentage of at least 0, got '", text, "'"));
  }
  return tolerance;
}

absl::Status AddRegressReference(absl::string_view text,
                                 RegressOptions& options) {
  const size_t equals = text.find('=');
  if (equals == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reference needs METRIC=VALUE, got '", text, "'"));
  }
  absl::StatusOr<RegressMetric> metric =
      ParseRegressMetric(text.substr(0, equals));
  if (!metric.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reference ", metric.status().message()));
  }
  const absl::string_view value_text = text.substr(equals + 1);
  double value = 0;
  if (!absl::SimpleAtod(value_text, &value) || !std::isfinite(value) ||
      value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reference ", text.substr(0, equals),
                     " needs a number of at least 0, got '", value_text, "'"));
  }
  if (!options.references.emplace(*metric, value).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reference ", text.substr(0, equals), " given twice"));
  }
  return absl::OkStatus();
}

bool SameRegressSeries(const v1::RunSpec& a, const v1::RunSpec& b) {
  return a.name() == b.name() && a.workload() == b.workload() &&
         a.config() == b.config() && a.level() == b.level() &&
         a.nodes() == b.nodes() && a.ranks_per_node() == b.ranks_per_node() &&
         a.device() == b.device() && a.batch_size() == b.batch_size() &&
         a.precision() == b.precision() && a.compression() == b.compression() &&
         a.epochs() == b.epochs() && a.system() == b.system();
}

std::vector<v1::Run> SelectRegressSeries(const std::vector<v1::Run>& runs,
                                         const v1::RunSpec& spec, int window) {
  std::vector<v1::Run> series;
  for (const v1::Run& run : runs) {
    if (run.state() == v1::RUN_STATE_SUCCEEDED && run.has_score() &&
        SameRegressSeries(run.spec(), spec)) {
      series.push_back(run);
    }
  }
  std::sort(series.begin(), series.end(),
            [](const v1::Run& a, const v1::Run& b) { return a.id() > b.id(); });
  if (window >= 0 && series.size() > static_cast<size_t>(window)) {
    series.resize(window);
  }
  return series;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2;
}

bool RegressReport::regressed() const {
  return std::any_of(metrics.begin(), metrics.end(),
                     [](const MetricComparison& comparison) {
                       return comparison.verdict == RegressVerdict::kRegressed;
                     });
}

RegressReport CompareRegress(const std::vector<v1::Run>& current,
                             const std::vector<v1::Run>& baseline,
                             const RegressOptions& options) {
  RegressReport report;
  if (!current.empty()) report.name = current.front().spec().name();
  for (const v1::Run& run : current) report.run_ids.push_back(run.id());
  for (const v1::Run& run : baseline) report.baseline_runs.push_back(run.id());
  report.baseline_is_series = options.baseline_run == 0;
  report.tolerance_pct = options.tolerance_pct;
  for (RegressMetric metric : JudgedMetrics(options)) {
    MetricComparison comparison;
    comparison.metric = metric;
    comparison.value = MedianOf(current, metric);
    if (auto reference = options.references.find(metric);
        reference != options.references.end()) {
      comparison.baseline = reference->second;
      comparison.from_reference = true;
    } else if (!baseline.empty()) {
      comparison.baseline = MedianOf(baseline, metric);
    }
    Judge(comparison, options.tolerance_pct);
    if (metric == RegressMetric::kQuality && !comparison.from_reference &&
        !baseline.empty() && MostReachedTarget(baseline) &&
        !MostReachedTarget(current)) {
      comparison.verdict = RegressVerdict::kRegressed;
      comparison.reason = absl::StrCat(
          comparison.reason.empty() ? "" : comparison.reason + "; ",
          "the baseline reached its target, this run did not");
    }
    report.metrics.push_back(std::move(comparison));
  }
  return report;
}

std::string RegressVerdictName(RegressVerdict verdict) {
  switch (verdict) {
    case RegressVerdict::kNoBaseline:
      return "no baseline";
    case RegressVerdict::kOk:
      return "ok";
    case RegressVerdict::kRegressed:
      return "REGRESSED";
    case RegressVerdict::kImproved:
      return "improved";
  }
  return "unknown";
}

std::string FormatRegressReport(const RegressReport& report) {
  if (!report.error.empty()) {
    return absl::StrCat(report.error, ": nothing compared\n");
  }
  std::vector<std::vector<std::string>> rows;
  for (const MetricComparison& comparison : report.metrics) {
    rows.push_back(
        {RegressMetricName(comparison.metric),
         comparison.baseline.has_value()
             ? FormatMetricValue(comparison.metric, *comparison.baseline)
             : "-",
         BaselineSource(report, comparison),
         FormatMetricValue(comparison.metric, comparison.value),
         comparison.change_pct.has_value()
             ? absl::StrFormat("%+.1f%%", *comparison.change_pct)
             : "-",
         RegressVerdictName(comparison.verdict)});
  }
  std::string text = FormatTable(
      {"metric", "baseline", "from", "this run", "change", "verdict"}, rows,
      /*right_aligned=*/{1, 3, 4});
  if (report.baseline_runs.empty() && report.baseline_is_series) {
    absl::StrAppend(&text, NoBaselineLine(report), "\n");
  }
  if (!report.regressed()) {
    absl::StrAppendFormat(&text, "no regression (tolerance %g%%)\n",
                          report.tolerance_pct);
  }
  for (const MetricComparison& comparison : report.metrics) {
    if (comparison.verdict == RegressVerdict::kRegressed) {
      absl::StrAppend(&text, "REGRESSED ", RegressMetricName(comparison.metric),
                      ": ", comparison.reason, "\n");
    }
  }
  return text;
}

std::string RegressReportJson(const RegressReport& report) {
  nlohmann::ordered_json json = {
      {"name", report.name},
      {"run_ids", report.run_ids},
      {"baseline",
       {{"kind", report.baseline_is_series ? "series" : "run"},
        {"run_ids", report.baseline_runs}}},
      {"tolerance_pct", report.tolerance_pct},
      {"regressed", report.regressed()},
      {"metrics", nlohmann::ordered_json::array()},
  };
  if (!report.error.empty()) json["error"] = report.error;
  for (const MetricComparison& comparison : report.metrics) {
    nlohmann::ordered_json metric = {
        {"metric", RegressMetricName(comparison.metric)},
        {"baseline", nullptr},
        {"from", nullptr},
        {"value", comparison.value},
        {"change_pct", nullptr},
        {"verdict", JsonVerdictName(comparison.verdict)},
    };
    if (comparison.baseline.has_value()) {
      metric["baseline"] = *comparison.baseline;
      metric["from"] = comparison.from_reference ? "reference" : "runs";
    }
    if (comparison.change_pct.has_value()) {
      metric["change_pct"] = *comparison.change_pct;
    }
    if (!comparison.reason.empty()) metric["reason"] = comparison.reason;
    json["metrics"].push_back(std::move(metric));
  }
  return json.dump(2) + "\n";
}

std::string RegressJUnitXml(const RegressReport& report) {
  const std::string suite = XmlEscape("hpcai500 regress " + report.name);
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  if (!report.error.empty()) {
    absl::StrAppend(
        &xml, "<testsuite name=\"", suite,
        "\" tests=\"1\" failures=\"0\" errors=\"1\" "
        "skipped=\"0\">\n",
        "  <testcase classname=\"hpcai500.regress\" name=\"run\">\n",
        "    <error message=\"", XmlEscape(report.error),
        "\"/>\n  </testcase>\n</testsuite>\n");
    return xml;
  }
  int failures = 0;
  int skipped = 0;
  std::string cases;
  for (const MetricComparison& comparison : report.metrics) {
    const std::string name = RegressMetricName(comparison.metric);
    absl::StrAppend(&cases,
                    "  <testcase classname=\"hpcai500.regress\" name=\"", name,
                    "\">\n");
    if (comparison.verdict == RegressVerdict::kRegressed) {
      ++failures;
      absl::StrAppend(
          &cases, "    <failure message=\"", XmlEscape(comparison.reason),
          "\">",
          XmlEscape(absl::StrCat(
              name, ": baseline ",
              FormatMetricValue(comparison.metric, *comparison.baseline), " (",
              BaselineSource(report, comparison), "), this run ",
              FormatMetricValue(comparison.metric, comparison.value))),
          "</failure>\n");
    } else if (comparison.verdict == RegressVerdict::kNoBaseline) {
      ++skipped;
      absl::StrAppend(&cases, "    <skipped message=\"",
                      XmlEscape(NoBaselineLine(report)), "\"/>\n");
    }
    absl::StrAppend(&cases, "  </testcase>\n");
  }
  absl::StrAppend(&xml, "<testsuite name=\"", suite, "\" tests=\"",
                  report.metrics.size(), "\" failures=\"", failures,
                  "\" errors=\"0\" skipped=\"", skipped, "\">\n", cases,
                  "</testsuite>\n");
  return xml;
}

}  // namespace hpcai500
