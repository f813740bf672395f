// regress's flag values and its --baseline FILE
// (cli/regress/regress_flags.h).
#include "cli/regress/regress_flags.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// An integer of at least `least`; the error names `flag`.
absl::StatusOr<int> ParseCountOfAtLeast(absl::string_view flag,
                                        absl::string_view text, int least) {
  int count = 0;
  if (!absl::SimpleAtoi(text, &count) || count < least) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " must be an integer of at least ", least, ", got '", text, "'"));
  }
  return count;
}

// One metric entry {"metric": ..., "value": ...} of a report into `spec`
// (a null value is skipped); errors begin with `where`.
absl::Status ReadMetricValue(const nlohmann::json& entry,
                             const std::string& where,
                             std::map<RegressMetric, double>& spec) {
  if (!entry.is_object() || !entry.contains("metric") ||
      !entry["metric"].is_string() || !entry.contains("value")) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": each metric needs \"metric\" and \"value\""));
  }
  absl::StatusOr<RegressMetric> metric =
      ParseRegressMetric(entry["metric"].get<std::string>());
  if (!metric.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", metric.status().message()));
  }
  if (entry["value"].is_null()) return absl::OkStatus();
  if (!entry["value"].is_number() ||
      !std::isfinite(entry["value"].get<double>())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", RegressMetricName(*metric),
                     "'s value is not a finite number"));
  }
  spec[*metric] = entry["value"].get<double>();
  return absl::OkStatus();
}

// One report {"name": ..., "metrics": [...]} into values[name]; errors
// begin with `where` ("spec 2").
absl::Status ReadReportValues(
    const nlohmann::json& report, const std::string& where,
    std::map<std::string, std::map<RegressMetric, double>>& values) {
  if (!report.is_object() || !report.contains("name") ||
      !report["name"].is_string() || !report.contains("metrics") ||
      !report["metrics"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": needs a string \"name\" and an array \"metrics\""));
  }
  std::map<RegressMetric, double>& spec =
      values[report["name"].get<std::string>()];
  for (const nlohmann::json& entry : report["metrics"]) {
    RETURN_IF_ERROR(ReadMetricValue(entry, where, spec));
  }
  return absl::OkStatus();
}

}  // namespace

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
    RETURN_IF_ERROR(
        ReadReportValues(reports[i], absl::StrCat("spec ", i + 1), values));
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
  return ParseCountOfAtLeast("--min-history", text, 2);
}

absl::StatusOr<int> ParseRegressWindow(absl::string_view text) {
  return ParseCountOfAtLeast("--window", text, 1);
}

absl::StatusOr<double> ParseRegressPercent(absl::string_view flag,
                                           absl::string_view text) {
  double percent = 0;
  if (!absl::SimpleAtod(text, &percent) || !std::isfinite(percent) ||
      percent < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " must be a percentage of at least 0, got '", text, "'"));
  }
  return percent;
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

}  // namespace hpcai500
