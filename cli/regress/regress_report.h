// The reports of `hpcai500 regress` (cli/regress/regress.h judges): a table for
// people, JSON for scripts (and a later --baseline FILE), Markdown for a CI
// summary, and JUnit XML for a CI test view.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_REGRESS_REGRESS_REPORT_H_
#define HPCAI500_CLI_REGRESS_REGRESS_REPORT_H_

#include <string>
#include <vector>

#include "cli/regress/regress.h"

namespace hpcai500 {

// The table (metric, baseline, from, this run, change, band, verdict) and a
// closing line: the regressed metrics with their reasons, or "no
// regression", and "no baseline: run N starts the series" when there were
// no baseline runs ("no baseline: the baseline file holds no value of
// NAME" when a --baseline FILE has none for the spec).
std::string FormatRegressReport(const RegressReport& report);
// Each report's FormatRegressReport after a blank line, headed by its
// spec name when there are several (a suite).
std::string FormatRegressReports(const std::vector<RegressReport>& reports);
// One report (FormatRegressReport) as one indented JSON object.
std::string RegressReportJson(const RegressReport& report);
// A suite's reports as one JSON object: {"suite", "regressed", "failed",
// "specs": [report, ...]} (what --baseline FILE reads back).
std::string RegressSuiteJson(const std::string& suite,
                             const std::vector<RegressReport>& reports);
// The summary a CI job posts: a heading with the suite's verdict, a table
// (spec, metric, value, baseline, band, verdict) and the reason of each
// regression; cell text escaped for GitHub/GitLab Markdown.
std::string RegressMarkdown(const std::string& suite,
                            const std::vector<RegressReport>& reports);
// JUnit XML: <testsuites> with one <testsuite> per spec and one <testcase>
// (classname "hpcai500.regress.SPEC", name METRIC) per metric, with a
// <failure> naming the metric, the move, the band and the evidence for each
// regression and <skipped> without a baseline; a spec whose runs failed is
// one "run" testcase with an <error>.
std::string RegressJUnitXml(const std::string& suite,
                            const std::vector<RegressReport>& reports);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_REGRESS_REPORT_H_
