#include "cli/regress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/format.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// Every metric but flops, which Valid FLOPS already judges.
std::vector<RegressMetric> DefaultMetrics() {
  return {RegressMetric::kThroughput, RegressMetric::kValidFlops,
          RegressMetric::kQuality, RegressMetric::kTimeToTarget};
}

// The most history runs a reason names before "...".
constexpr size_t kEvidenceShown = 10;

// Whether more than half of `runs` reached their target.
bool MostReachedTarget(const std::vector<v1::Run>& runs) {
  size_t reached = std::count_if(
      runs.begin(), runs.end(),
      [](const v1::Run& run) { return run.score().reached_target(); });
  return !runs.empty() && 2 * reached > runs.size();
}

// The median of the runs that have the metric; empty when none has.
std::optional<double> MedianOf(const std::vector<v1::Run>& runs,
                               RegressMetric metric) {
  std::vector<double> values;
  for (const v1::Run& run : runs) {
    if (std::optional<double> value = RegressMetricValue(run, metric)) {
      values.push_back(*value);
    }
  }
  if (values.empty()) return std::nullopt;
  return Median(std::move(values));
}

// The metrics judged: the asked ones (or the defaults), then any other one
// that has a fixed value.
std::vector<RegressMetric> JudgedMetrics(
    const RegressOptions& options,
    const std::map<RegressMetric, double>& fixed) {
  std::vector<RegressMetric> metrics = options.metrics;
  if (metrics.empty()) metrics = DefaultMetrics();
  for (const auto& [metric, value] : fixed) {
    if (std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
      metrics.push_back(metric);
    }
  }
  return metrics;
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
    case RegressMetric::kTimeToTarget:
      return absl::StrFormat("%.1f s", value);
  }
  return absl::StrCat(value);
}

std::string FormatOptionalValue(RegressMetric metric,
                                const std::optional<double>& value) {
  if (!value.has_value()) {
    return metric == RegressMetric::kTimeToTarget ? "not reached" : "-";
  }
  return FormatMetricValue(metric, *value);
}

std::string RunList(const std::vector<int64_t>& ids) {
  return absl::StrCat(ids.size() == 1 ? "run " : "runs ",
                      absl::StrJoin(ids, ", "));
}

// The runs named as evidence, at most kEvidenceShown of them.
std::string EvidenceList(const std::vector<int64_t>& ids) {
  if (ids.size() <= kEvidenceShown) return RunList(ids);
  return absl::StrCat(
      RunList(std::vector<int64_t>(ids.begin(), ids.begin() + kEvidenceShown)),
      ", ...");
}

// "±8.1%".
std::string BandWidth(const ToleranceBand& band) {
  return absl::StrFormat("\u00b1%.1f%%", band.HalfWidthPct());
}

// How the band was drawn and from what: "±8.1% learned from 7 runs (12, 11,
// ...)" or "±5.0% fixed: 3 good runs, fewer than 5".
std::string BandEvidence(const MetricComparison& comparison,
                         const BandOptions& options) {
  const ToleranceBand& band = *comparison.band;
  if (band.learned) {
    return absl::StrFormat("%s learned (robust z %g) from %d good %s",
                           BandWidth(band), options.threshold, band.history,
                           EvidenceList(comparison.evidence));
  }
  return absl::StrFormat("%s fixed (--tolerance): %d good run%s, fewer than %d",
                         BandWidth(band), band.history,
                         band.history == 1 ? "" : "s", options.min_history);
}

std::string BaselineSource(const RegressReport& report,
                           const MetricComparison& comparison) {
  if (!comparison.baseline.has_value()) return "-";
  if (comparison.from_reference) {
    return report.baseline_kind == RegressBaselineKind::kFile ? "file"
                                                              : "reference";
  }
  const std::string runs = RunList(report.baseline_runs);
  switch (report.baseline_kind) {
    case RegressBaselineKind::kPromoted:
      return "promoted " + runs;
    case RegressBaselineKind::kLastGood:
      return "last good " + runs;
    default:
      return runs;
  }
}

// Why there is nothing to compare with: a --baseline FILE without the
// spec, else a series without good runs yet.
std::string NoBaselineLine(const RegressReport& report) {
  if (report.baseline_kind == RegressBaselineKind::kFile) {
    return absl::StrCat("no baseline: the baseline file holds no value of ",
                        report.name);
  }
  return absl::StrCat("no baseline: ", RunList(report.run_ids),
                      report.run_ids.size() == 1 ? " starts" : " start",
                      " the series");
}

// "dropped 12.3% (1052.0 samples/s -> 923.1 samples/s)".
std::string Move(const MetricComparison& comparison) {
  const RegressMetric metric = comparison.metric;
  const std::string values =
      absl::StrCat(FormatMetricValue(metric, *comparison.baseline), " -> ",
                   FormatOptionalValue(metric, comparison.value));
  if (!comparison.change_pct.has_value()) return values;
  return absl::StrFormat("%s %.1f%% (%s)",
                         *comparison.change_pct < 0 ? "dropped" : "rose",
                         std::fabs(*comparison.change_pct), values);
}

// Sets the change from the baseline, the band and the verdict they earn.
void Judge(MetricComparison& comparison, const std::vector<v1::Run>& history,
           const RegressOptions& options) {
  if (!comparison.baseline.has_value()) {
    comparison.verdict = RegressVerdict::kNoBaseline;
    return;
  }
  const double baseline = *comparison.baseline;
  std::vector<double> learned_from;
  for (const v1::Run& run : history) {
    if (std::optional<double> value =
            RegressMetricValue(run, comparison.metric)) {
      learned_from.push_back(*value);
      comparison.evidence.push_back(run.id());
    }
  }
  BandOptions band_options = options.band;
  band_options.fixed_pct = options.tolerance_pct;
  comparison.band = LearnBand(baseline, learned_from, band_options);
  if (!comparison.value.has_value()) {
    // Only time to target lacks a value: the target was not reached.
    comparison.verdict = RegressVerdict::kRegressed;
    comparison.reason =
        absl::StrCat("no run reached the target; the baseline did in ",
                     FormatMetricValue(comparison.metric, baseline));
    return;
  }
  const double value = *comparison.value;
  if (baseline > 0) {
    // Multiplied first so that round percentages stay exact (95 vs 100: -5).
    comparison.change_pct = (value - baseline) * 100 / baseline;
  }
  switch (JudgeAgainstBand(value, *comparison.band, comparison.metric)) {
    case BandVerdict::kWithin:
      comparison.verdict = RegressVerdict::kOk;
      return;
    case BandVerdict::kWorse:
      comparison.verdict = RegressVerdict::kRegressed;
      break;
    case BandVerdict::kBetter:
      comparison.verdict = RegressVerdict::kImproved;
      break;
  }
  comparison.reason = absl::StrCat(Move(comparison), ", outside the band ",
                                   BandEvidence(comparison, band_options));
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

nlohmann::ordered_json ReportJson(const RegressReport& report) {
  nlohmann::ordered_json json = {
      {"name", report.name},
      {"run_ids", report.run_ids},
      {"baseline",
       {{"kind", RegressBaselineKindName(report.baseline_kind)},
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
        {"value", nullptr},
        {"change_pct", nullptr},
        {"band", nullptr},
        {"verdict", JsonVerdictName(comparison.verdict)},
    };
    if (comparison.value.has_value()) metric["value"] = *comparison.value;
    if (comparison.baseline.has_value()) {
      metric["baseline"] = *comparison.baseline;
      metric["from"] = comparison.from_reference ? "reference" : "runs";
    }
    if (comparison.change_pct.has_value()) {
      metric["change_pct"] = *comparison.change_pct;
    }
    if (comparison.band.has_value()) {
      const ToleranceBand& band = *comparison.band;
      metric["band"] = {{"low", band.low()},
                        {"high", band.high()},
                        {"half_width_pct", band.HalfWidthPct()},
                        {"learned", band.learned},
                        {"history_runs", comparison.evidence}};
    }
    if (!comparison.reason.empty()) metric["reason"] = comparison.reason;
    json["metrics"].push_back(std::move(metric));
  }
  return json;
}

std::string XmlEscape(absl::string_view text) {
  std::string out = absl::StrReplaceAll(text, {{"&", "&amp;"},
                                               {"<", "&lt;"},
                                               {">", "&gt;"},
                                               {"\"", "&quot;"},
                                               {"'", "&apos;"},
                                               {"\n", "&#10;"}});
  // Control characters other than tab and newline are not allowed in XML
  // 1.0.
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
      c = '?';
    }
  }
  return out;
}

// Text for one Markdown table cell: no line breaks, no column separators,
// no HTML.
std::string MarkdownCell(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"},
                                    {"\\", "\\\\"},
                                    {"<", "&lt;"},
                                    {">", "&gt;"},
                                    {"&", "&amp;"},
                                    {"\n", " "},
                                    {"\r", " "}});
}

std::string BandCell(const MetricComparison& comparison) {
  if (!comparison.band.has_value()) return "-";
  const ToleranceBand& band = *comparison.band;
  return absl::StrCat(BandWidth(band), band.learned ? " learned, " : " fixed, ",
                      band.history, band.history == 1 ? " run" : " runs");
}

// One spec's <testsuite>.
std::string JUnitSuite(const RegressReport& report) {
  const std::string suite = XmlEscape(report.name);
  const std::string classname = XmlEscape("hpcai500.regress." + report.name);
  if (!report.error.empty()) {
    return absl::StrCat("  <testsuite name=\"", suite,
                        "\" tests=\"1\" failures=\"0\" errors=\"1\" "
                        "skipped=\"0\">\n",
                        "    <testcase classname=\"", classname,
                        "\" name=\"run\">\n", "      <error message=\"",
                        XmlEscape(report.error),
                        "\"/>\n    </testcase>\n  </testsuite>\n");
  }
  int failures = 0;
  int skipped = 0;
  std::string cases;
  for (const MetricComparison& comparison : report.metrics) {
    const std::string name = RegressMetricName(comparison.metric);
    absl::StrAppend(&cases, "    <testcase classname=\"", classname,
                    "\" name=\"", name, "\">\n");
    if (comparison.verdict == RegressVerdict::kRegressed) {
      ++failures;
      const std::string message = absl::StrCat(name, " ", comparison.reason);
      absl::StrAppend(
          &cases, "      <failure message=\"", XmlEscape(message), "\">",
          XmlEscape(absl::StrCat(
              report.name, " ", name, ": baseline ",
              FormatMetricValue(comparison.metric, *comparison.baseline), " (",
              BaselineSource(report, comparison), "), this run ",
              FormatOptionalValue(comparison.metric, comparison.value), " (",
              RunList(report.run_ids), "); ", comparison.reason)),
          "</failure>\n");
    } else if (comparison.verdict == RegressVerdict::kNoBaseline) {
      ++skipped;
      absl::StrAppend(&cases, "      <skipped message=\"",
                      XmlEscape(NoBaselineLine(report)), "\"/>\n");
    }
    absl::StrAppend(&cases, "    </testcase>\n");
  }
  return absl::StrCat("  <testsuite name=\"", suite, "\" tests=\"",
                      report.metrics.size(), "\" failures=\"", failures,
                      "\" errors=\"0\" skipped=\"", skipped, "\">\n", cases,
                      "  </testsuite>\n");
}

}  // namespace

std::string RegressBaselineKindName(RegressBaselineKind kind) {
  switch (kind) {
    case RegressBaselineKind::kSeries:
      return "series";
    case RegressBaselineKind::kPromoted:
      return "promoted";
    case RegressBaselineKind::kLastGood:
      return "last-good";
    case RegressBaselineKind::kRun:
      return "run";
    case RegressBaselineKind::kFile:
      return "file";
  }
  return "unknown";
}

absl::StatusOr<std::map<std::string, std::map<RegressMetric, double>>>
ParseRegressBaselineFile(absl::string_view json_text) {
  const nlohmann::json json =
      nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError(
        "not a JSON object (expected what regress --json-file writes)");
  }
  std::vector<nlohmann::json> reports;
  if (json.contains("specs")) {
    if (!json["specs"].is_array()) {
      return absl::InvalidArgumentError("\"specs\" is not an array");
    }
    reports.assign(json["specs"].begin(), json["specs"].end());
  } else {
    reports.push_back(json);
  }
  std::map<std::string, std::map<RegressMetric, double>> values;
  for (size_t i = 0; i < reports.size(); ++i) {
    const nlohmann::json& report = reports[i];
    const std::string where = absl::StrCat("spec ", i + 1);
    if (!report.is_object() || !report.contains("name") ||
        !report["name"].is_string() || !report.contains("metrics") ||
        !report["metrics"].is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": needs a string \"name\" and an array \"metrics\""));
    }
    std::map<RegressMetric, double>& spec =
        values[report["name"].get<std::string>()];
    for (const nlohmann::json& entry : report["metrics"]) {
      if (!entry.is_object() || !entry.contains("metric") ||
          !entry["metric"].is_string() || !entry.contains("value")) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": each metric needs \"metric\" and \"value\""));
      }
      absl::StatusOr<RegressMetric> metric =
          ParseRegressMetric(entry["metric"].get<std::string>());
      if (!metric.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", metric.status().message()));
      }
      if (entry["value"].is_null()) continue;
      if (!entry["value"].is_number() ||
          !std::isfinite(entry["value"].get<double>())) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", RegressMetricName(*metric),
                         "'s value is not a finite number"));
      }
      spec[*metric] = entry["value"].get<double>();
    }
  }
  return values;
}

absl::Status ParseRegressBaseline(absl::string_view text,
                                  RegressOptions& options) {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "--baseline needs last-good, a run id or a file");
  }
  if (text == "last-good") {
    options.baseline = RegressBaselineKind::kLastGood;
    return absl::OkStatus();
  }
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    int64_t run = 0;
    if (!absl::SimpleAtoi(text, &run) || run <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--baseline: expected a run id (a positive integer), got '", text,
          "'"));
    }
    options.baseline = RegressBaselineKind::kRun;
    options.baseline_run = run;
    return absl::OkStatus();
  }
  options.baseline = RegressBaselineKind::kFile;
  options.baseline_file = std::string(text);
  return absl::OkStatus();
}

absl::StatusOr<int> ParseRegressMinHistory(absl::string_view text) {
  int runs = 0;
  if (!absl::SimpleAtoi(text, &runs) || runs < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min-history must be an integer of at least 2, got '", text, "'"));
  }
  return runs;
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
  return RegressSeriesKey(a) == RegressSeriesKey(b);
}

bool IsGoodSeriesRun(const v1::Run& run, const v1::RunSpec& spec) {
  return run.state() == v1::RUN_STATE_SUCCEEDED && run.has_score() &&
         run.invalidated_by().empty() && SameRegressSeries(run.spec(), spec);
}

std::vector<v1::Run> SelectRegressSeries(const std::vector<v1::Run>& runs,
                                         const v1::RunSpec& spec, int window) {
  std::vector<v1::Run> series;
  for (const v1::Run& run : runs) {
    if (IsGoodSeriesRun(run, spec)) series.push_back(run);
  }
  std::sort(series.begin(), series.end(),
            [](const v1::Run& a, const v1::Run& b) { return a.id() > b.id(); });
  if (window >= 0 && series.size() > static_cast<size_t>(window)) {
    series.resize(window);
  }
  return series;
}

bool RegressReport::regressed() const {
  return std::any_of(metrics.begin(), metrics.end(),
                     [](const MetricComparison& comparison) {
                       return comparison.verdict == RegressVerdict::kRegressed;
                     });
}

RegressReport CompareRegress(
    const std::vector<v1::Run>& current, const std::vector<v1::Run>& baseline,
    const std::vector<v1::Run>& history, RegressBaselineKind kind,
    const RegressOptions& options,
    const std::map<RegressMetric, double>& file_values) {
  RegressReport report;
  if (!current.empty()) report.name = current.front().spec().name();
  for (const v1::Run& run : current) report.run_ids.push_back(run.id());
  for (const v1::Run& run : baseline) report.baseline_runs.push_back(run.id());
  report.baseline_kind = kind;
  report.tolerance_pct = options.tolerance_pct;
  // --reference over the file's values.
  std::map<RegressMetric, double> fixed = file_values;
  for (const auto& [metric, value] : options.references) fixed[metric] = value;
  for (RegressMetric metric : JudgedMetrics(options, fixed)) {
    MetricComparison comparison;
    comparison.metric = metric;
    comparison.value = MedianOf(current, metric);
    if (auto value = fixed.find(metric); value != fixed.end()) {
      comparison.baseline = value->second;
      comparison.from_reference = true;
    } else {
      comparison.baseline = MedianOf(baseline, metric);
    }
    Judge(comparison, history, options);
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

RegressReport CompareRegress(const std::vector<v1::Run>& current,
                             const std::vector<v1::Run>& baseline,
                             const RegressOptions& options) {
  return CompareRegress(current, baseline, baseline,
                        RegressBaselineKind::kSeries, options);
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
         FormatOptionalValue(comparison.metric, comparison.value),
         comparison.change_pct.has_value()
             ? absl::StrFormat("%+.1f%%", *comparison.change_pct)
             : "-",
         BandCell(comparison), RegressVerdictName(comparison.verdict)});
  }
  std::string text = FormatTable(
      {"metric", "baseline", "from", "this run", "change", "band", "verdict"},
      rows, /*right_aligned=*/{1, 3, 4});
  if (report.baseline_runs.empty() &&
      report.baseline_kind == RegressBaselineKind::kSeries) {
    absl::StrAppend(&text, NoBaselineLine(report), "\n");
  }
  const bool nothing_compared = std::none_of(
      report.metrics.begin(), report.metrics.end(),
      [](const MetricComparison& c) { return c.baseline.has_value(); });
  if (report.baseline_kind == RegressBaselineKind::kFile && nothing_compared) {
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
  return ReportJson(report).dump(2) + "\n";
}

std::string RegressSuiteJson(const std::string& suite,
                             const std::vector<RegressReport>& reports) {
  nlohmann::ordered_json json = {
      {"suite", suite},
      {"regressed", std::any_of(reports.begin(), reports.end(),
                                [](const RegressReport& report) {
                                  return report.regressed();
                                })},
      {"failed", std::any_of(reports.begin(), reports.end(),
                             [](const RegressReport& report) {
                               return !report.error.empty();
                             })},
      {"specs", nlohmann::ordered_json::array()},
  };
  for (const RegressReport& report : reports) {
    json["specs"].push_back(ReportJson(report));
  }
  return json.dump(2) + "\n";
}

std::string RegressMarkdown(const std::string& suite,
                            const std::vector<RegressReport>& reports) {
  int regressed = 0;
  int failed = 0;
  int verdicts = 0;
  std::string rows;
  std::string reasons;
  for (const RegressReport& report : reports) {
    const std::string spec = MarkdownCell(report.name);
    if (!report.error.empty()) {
      ++failed;
      absl::StrAppend(&rows, "| ", spec, " | run | - | - | - | **FAILED** |\n");
      absl::StrAppend(&reasons, "- **", spec,
                      "** failed: ", MarkdownCell(report.error), "\n");
      continue;
    }
    for (const MetricComparison& comparison : report.metrics) {
      ++verdicts;
      const bool bad = comparison.verdict == RegressVerdict::kRegressed;
      if (bad) {
        ++regressed;
        absl::StrAppend(&reasons, "- **", spec, " ",
                        RegressMetricName(comparison.metric),
                        "**: ", MarkdownCell(comparison.reason), "\n");
      }
      const std::string verdict = RegressVerdictName(comparison.verdict);
      absl::StrAppend(
          &rows, "| ", spec, " | ", RegressMetricName(comparison.metric), " | ",
          MarkdownCell(
              FormatOptionalValue(comparison.metric, comparison.value)),
          " | ",
          comparison.baseline.has_value()
              ? MarkdownCell(absl::StrCat(
                    FormatMetricValue(comparison.metric, *comparison.baseline),
                    " (", BaselineSource(report, comparison), ")"))
              : "-",
          " | ", MarkdownCell(BandCell(comparison)), " | ",
          bad ? "**" + verdict + "**" : verdict,
          comparison.change_pct.has_value()
              ? absl::StrFormat(" %+.1f%%", *comparison.change_pct)
              : "",
          " |\n");
    }
  }
  std::string verdict = "no regression";
  if (regressed > 0) {
    verdict =
        absl::StrCat("REGRESSED (", regressed, " of ", verdicts, " verdicts)");
  }
  if (failed > 0) {
    absl::StrAppend(&verdict, regressed > 0 ? ", " : "; ", failed,
                    failed == 1 ? " spec" : " specs", " failed");
  }
  std::string text = absl::StrCat(
      "## hpcai500 regress: ", MarkdownCell(suite), " \u2014 ", verdict,
      "\n\n| spec | metric | value | baseline | band | verdict |\n"
      "|---|---|---:|---:|---|---|\n",
      rows);
  if (!reasons.empty()) absl::StrAppend(&text, "\n", reasons);
  return text;
}

std::string RegressJUnitXml(const std::string& suite,
                            const std::vector<RegressReport>& reports) {
  int tests = 0;
  int failures = 0;
  int errors = 0;
  std::string suites;
  for (const RegressReport& report : reports) {
    if (!report.error.empty()) {
      ++tests;
      ++errors;
    } else {
      tests += static_cast<int>(report.metrics.size());
      failures += static_cast<int>(std::count_if(
          report.metrics.begin(), report.metrics.end(),
          [](const MetricComparison& comparison) {
            return comparison.verdict == RegressVerdict::kRegressed;
          }));
    }
    absl::StrAppend(&suites, JUnitSuite(report));
  }
  return absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                      "<testsuites name=\"",
                      XmlEscape("hpcai500 regress " + suite), "\" tests=\"",
                      tests, "\" failures=\"", failures, "\" errors=\"", errors,
                      "\">\n", suites, "</testsuites>\n");
}

}  // namespace hpcai500
