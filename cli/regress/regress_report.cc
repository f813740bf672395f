// The reports of `hpcai500 regress`: table, JSON, Markdown and JUnit XML
// (cli/regress/regress_report.h).
#include "cli/regress/regress_report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/text/format.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

std::string BaselineSource(const RegressReport& report,
                           const MetricComparison& comparison) {
  if (!comparison.baseline.has_value()) return "-";
  if (comparison.from_reference) {
    return report.baseline_kind == RegressBaselineKind::kFile ? "file"
                                                              : "reference";
  }
  const std::string runs = FormatRunIds(report.baseline_runs);
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
  return absl::StrCat("no baseline: ", FormatRunIds(report.run_ids),
                      report.run_ids.size() == 1 ? " starts" : " start",
                      " the series");
}

// One metric's comparison as a JSON object; what it lacks is null.
nlohmann::ordered_json MetricJson(const MetricComparison& comparison) {
  nlohmann::ordered_json metric = {
      {"metric", RegressMetricName(comparison.metric)},
      {"baseline", nullptr},
      {"from", nullptr},
      {"value", nullptr},
      {"change_pct", nullptr},
      {"band", nullptr},
      {"verdict", RegressVerdictJsonName(comparison.verdict)},
  };
  if (comparison.value.has_value()) metric["value"] = *comparison.value;
  if (comparison.spread_pct.has_value()) {
    metric["spread_pct"] = *comparison.spread_pct;
    metric["unrepeatable"] = comparison.unrepeatable;
  }
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
  if (!comparison.change_context.empty()) {
    metric["change"] = comparison.change_context;
  }
  return metric;
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
    json["metrics"].push_back(MetricJson(comparison));
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
  return absl::StrCat(FormatBandWidth(band),
                      band.learned ? " learned, " : " fixed, ", band.history,
                      band.history == 1 ? " run" : " runs");
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
              FormatRegressValue(comparison.metric, *comparison.baseline), " (",
              BaselineSource(report, comparison), "), this run ",
              FormatRegressValue(comparison.metric, comparison.value), " (",
              FormatRunIds(report.run_ids), "); ", comparison.reason)),
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

// The comparison of each metric as a table.
std::string ReportTable(const RegressReport& report) {
  std::vector<std::vector<std::string>> rows;
  for (const MetricComparison& comparison : report.metrics) {
    rows.push_back(
        {RegressMetricName(comparison.metric),
         comparison.baseline.has_value()
             ? FormatRegressValue(comparison.metric, *comparison.baseline)
             : "-",
         BaselineSource(report, comparison),
         FormatRegressValue(comparison.metric, comparison.value),
         comparison.change_pct.has_value()
             ? absl::StrFormat("%+.1f%%", *comparison.change_pct)
             : "-",
         BandCell(comparison), RegressVerdictName(comparison.verdict)});
  }
  return FormatTable(
      {"metric", "baseline", "from", "this run", "change", "band", "verdict"},
      rows, /*right_aligned=*/{1, 3, 4});
}

// The lines under the table: why there is no baseline, "no regression",
// each unrepeatable metric, then each regression with its reason.
std::string ReportVerdictLines(const RegressReport& report) {
  std::string text;
  const bool nothing_compared = std::none_of(
      report.metrics.begin(), report.metrics.end(),
      [](const MetricComparison& c) { return c.baseline.has_value(); });
  if ((report.baseline_runs.empty() &&
       report.baseline_kind == RegressBaselineKind::kSeries) ||
      (report.baseline_kind == RegressBaselineKind::kFile &&
       nothing_compared)) {
    absl::StrAppend(&text, NoBaselineLine(report), "\n");
  }
  if (!report.regressed()) {
    absl::StrAppendFormat(&text, "no regression (tolerance %g%%)\n",
                          report.tolerance_pct);
  }
  for (const MetricComparison& comparison : report.metrics) {
    if (comparison.unrepeatable) {
      absl::StrAppendFormat(
          &text,
          "unrepeatable %s: its %d repetitions vary by %.1f%% (CV, above "
          "--max-cv): a move within that is noise\n",
          RegressMetricName(comparison.metric), report.run_ids.size(),
          *comparison.spread_pct);
    }
  }
  for (const MetricComparison& comparison : report.metrics) {
    if (comparison.verdict == RegressVerdict::kRegressed) {
      absl::StrAppend(&text, "REGRESSED ", RegressMetricName(comparison.metric),
                      ": ", comparison.reason, "\n");
    }
  }
  return text;
}

// One metric's row of the Markdown table.
std::string MarkdownRow(const std::string& spec, const RegressReport& report,
                        const MetricComparison& comparison) {
  const std::string verdict = RegressVerdictName(comparison.verdict);
  const bool bad = comparison.verdict == RegressVerdict::kRegressed;
  return absl::StrCat(
      "| ", spec, " | ", RegressMetricName(comparison.metric), " | ",
      MarkdownCell(FormatRegressValue(comparison.metric, comparison.value)),
      " | ",
      comparison.baseline.has_value()
          ? MarkdownCell(absl::StrCat(
                FormatRegressValue(comparison.metric, *comparison.baseline),
                " (", BaselineSource(report, comparison), ")"))
          : "-",
      " | ", MarkdownCell(BandCell(comparison)), " | ",
      bad ? "**" + verdict + "**" : verdict,
      comparison.change_pct.has_value()
          ? absl::StrFormat(" %+.1f%%", *comparison.change_pct)
          : "",
      " |\n");
}

// The suite's verdict in the Markdown heading: "no regression" or
// "REGRESSED (N of M verdicts)", and how many specs failed.
std::string MarkdownVerdict(const RegressTally& tally) {
  std::string verdict = "no regression";
  if (tally.regressed > 0) {
    verdict = absl::StrCat("REGRESSED (", tally.regressed, " of ",
                           tally.verdicts, " verdicts)");
  }
  if (tally.failed > 0) {
    absl::StrAppend(&verdict, tally.regressed > 0 ? ", " : "; ", tally.failed,
                    tally.failed == 1 ? " spec" : " specs", " failed");
  }
  return verdict;
}

}  // namespace

std::string FormatRegressReport(const RegressReport& report) {
  if (!report.error.empty()) {
    return absl::StrCat(report.error, ": nothing compared\n");
  }
  return absl::StrCat(ReportTable(report), ReportVerdictLines(report));
}

std::string FormatRegressReports(const std::vector<RegressReport>& reports) {
  std::string text;
  for (const RegressReport& report : reports) {
    absl::StrAppend(&text, "\n", reports.size() > 1 ? report.name + "\n" : "",
                    FormatRegressReport(report));
  }
  return text;
}

std::string RegressReportJson(const RegressReport& report) {
  return ReportJson(report).dump(2) + "\n";
}

std::string RegressSuiteJson(const std::string& suite,
                             const std::vector<RegressReport>& reports) {
  const RegressTally tally = TallyRegressReports(reports);
  nlohmann::ordered_json json = {
      {"suite", suite},
      {"regressed", tally.regressed > 0},
      {"failed", tally.failed > 0},
      {"specs", nlohmann::ordered_json::array()},
  };
  for (const RegressReport& report : reports) {
    json["specs"].push_back(ReportJson(report));
  }
  return json.dump(2) + "\n";
}

std::string RegressMarkdown(const std::string& suite,
                            const std::vector<RegressReport>& reports) {
  std::string rows;
  std::string reasons;
  for (const RegressReport& report : reports) {
    const std::string spec = MarkdownCell(report.name);
    if (!report.error.empty()) {
      absl::StrAppend(&rows, "| ", spec, " | run | - | - | - | **FAILED** |\n");
      absl::StrAppend(&reasons, "- **", spec,
                      "** failed: ", MarkdownCell(report.error), "\n");
      continue;
    }
    for (const MetricComparison& comparison : report.metrics) {
      absl::StrAppend(&rows, MarkdownRow(spec, report, comparison));
      if (comparison.verdict == RegressVerdict::kRegressed) {
        absl::StrAppend(&reasons, "- **", spec, " ",
                        RegressMetricName(comparison.metric),
                        "**: ", MarkdownCell(comparison.reason), "\n");
      }
    }
  }
  std::string text =
      absl::StrCat("## hpcai500 regress: ", MarkdownCell(suite), " \u2014 ",
                   MarkdownVerdict(TallyRegressReports(reports)),
                   "\n\n| spec | metric | value | baseline | band | verdict |\n"
                   "|---|---|---:|---:|---|---|\n",
                   rows);
  if (!reasons.empty()) absl::StrAppend(&text, "\n", reasons);
  return text;
}

std::string RegressJUnitXml(const std::string& suite,
                            const std::vector<RegressReport>& reports) {
  std::string suites;
  for (const RegressReport& report : reports) {
    absl::StrAppend(&suites, JUnitSuite(report));
  }
  const RegressTally tally = TallyRegressReports(reports);
  return absl::StrCat(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", "<testsuites name=\"",
      XmlEscape("hpcai500 regress " + suite), "\" tests=\"",
      tally.verdicts + tally.failed, "\" failures=\"", tally.regressed,
      "\" errors=\"", tally.failed, "\">\n", suites, "</testsuites>\n");
}

}  // namespace hpcai500
