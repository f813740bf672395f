// RegressCommand: `hpcai500 regress` over the coordinator
// (cli/regress/regress_command.h).
#include "cli/regress/regress_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/client/exit_codes.h"
#include "cli/commands/watch.h"
#include "cli/regress/regress_changes.h"
#include "cli/regress/regress_report.h"
#include "common/run_state.h"
#include "methodology/suite.h"

namespace hpcai500 {
namespace {

// Why a submission's runs cannot be compared, or "" when each of them
// succeeded with a score.
std::string UnscoredRunError(const std::vector<v1::Run>& runs) {
  for (const v1::Run& run : runs) {
    if (ExitCodeForRun(run) != kExitFailed) continue;
    switch (run.state()) {
      case v1::RUN_STATE_SUCCEEDED:
        return absl::StrCat("run ", run.id(), " succeeded without a score");
      case v1::RUN_STATE_FAILED:
      case v1::RUN_STATE_CANCELLED:
      case v1::RUN_STATE_ABORTED:
        return absl::StrCat("run ", run.id(), " ", RunStateName(run.state()),
                            run.error().empty() ? "" : ": ", run.error());
      default:
        return absl::StrCat("run ", run.id(), " did not finish (last seen ",
                            RunStateName(run.state()), ")");
    }
  }
  return "";
}

// Writes `text` to `path`, replacing it; false with errno set on failure.
bool WriteTextFile(const std::string& path, const std::string& text) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int write_errno = errno;
  if (std::fclose(file) != 0) return false;
  errno = write_errno;
  return written;
}

// `runs` (in submission order) grouped by submission: one group per spec
// of the suite, in the suite's order.
std::vector<std::vector<v1::Run>> BySubmission(std::vector<v1::Run> runs) {
  std::vector<std::vector<v1::Run>> submissions;
  for (v1::Run& run : runs) {
    if (submissions.empty() ||
        submissions.back().front().submission_id() != run.submission_id()) {
      submissions.emplace_back();
    }
    submissions.back().push_back(std::move(run));
  }
  return submissions;
}

}  // namespace

RegressCommand::RegressCommand(const CommandContext& context)
    : client_(context.client), out_(context.out), err_(context.err) {}

bool RegressCommand::ReadBaselineRun(int64_t run_id,
                                     std::vector<v1::Run>& baseline) {
  v1::Run run;
  grpc::Status status = client_.GetRun(run_id, &run);
  if (!status.ok()) {
    client_.ReportError(absl::StrCat("baseline run ", run_id), status);
    return false;
  }
  if (run.state() != v1::RUN_STATE_SUCCEEDED || !run.has_score()) {
    err_ << "hpcai500: baseline run " << run_id << " is "
         << RunStateName(run.state())
         << (run.state() == v1::RUN_STATE_SUCCEEDED ? " without a score" : "")
         << "; a baseline must be a finished run with a score\n";
    return false;
  }
  if (!run.invalidated_by().empty()) {
    err_ << "hpcai500: baseline run " << run_id
         << "'s result was invalidated by " << run.invalidated_by() << " ("
         << run.invalidation_reason() << "); it cannot be a baseline\n";
    return false;
  }
  baseline.push_back(std::move(run));
  return true;
}

bool RegressCommand::ReadSeries(const std::vector<v1::Run>& runs, int window,
                                std::vector<v1::Run>& series) {
  const v1::RunSpec& spec = runs.front().spec();
  v1::ListRunsRequest filter;
  filter.set_name(spec.name());
  filter.set_workload(spec.workload());
  filter.set_config(spec.config());
  filter.set_state(v1::RUN_STATE_SUCCEEDED);
  // The baseline never holds the runs it judges, nor later ones.
  filter.set_before_id(std::min_element(runs.begin(), runs.end(),
                                        [](const v1::Run& a, const v1::Run& b) {
                                          return a.id() < b.id();
                                        })
                           ->id());
  std::vector<v1::Run> candidates;
  grpc::Status status = client_.ListRunsPaged(filter, [&](v1::Run run) {
    if (IsGoodSeriesRun(run, spec)) candidates.push_back(std::move(run));
    return static_cast<int>(candidates.size()) < window;
  });
  if (!status.ok()) {
    client_.ReportError("regress: list the earlier runs", status);
    return false;
  }
  series = SelectRegressSeries(candidates, spec, window);
  return true;
}

bool RegressCommand::ReadPromotedBaseline(const v1::RunSpec& spec,
                                          std::vector<v1::Run>& baseline) {
  v1::GetBaselineRequest request;
  *request.mutable_spec() = spec;
  v1::Baseline promoted;
  grpc::Status status = client_.Unary(
      &v1::ClientService::StubInterface::GetBaseline, request, &promoted);
  // None promoted, or a coordinator from before promoted baselines.
  if (status.error_code() == grpc::StatusCode::NOT_FOUND ||
      status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return true;
  }
  if (!status.ok()) {
    client_.ReportError("regress: read the promoted baseline", status);
    return false;
  }
  return ReadBaselineRun(promoted.run_id(), baseline);
}

std::optional<RegressCommand::Baseline> RegressCommand::ChooseBaseline(
    const v1::RunSpec& spec, const RegressOptions& options,
    const std::vector<v1::Run>& named_run,
    const std::vector<v1::Run>& history) {
  Baseline baseline;
  baseline.kind = options.baseline;
  switch (options.baseline) {
    case RegressBaselineKind::kRun:
      baseline.runs = named_run;
      break;
    case RegressBaselineKind::kFile:
      if (auto it = options.file_values.find(spec.name());
          it != options.file_values.end()) {
        baseline.file_values = it->second;
      }
      break;
    case RegressBaselineKind::kLastGood:
      if (!history.empty()) baseline.runs.push_back(history.front());
      break;
    case RegressBaselineKind::kSeries:
    case RegressBaselineKind::kPromoted:
      if (!ReadPromotedBaseline(spec, baseline.runs)) return std::nullopt;
      if (baseline.runs.empty()) {
        baseline.kind = RegressBaselineKind::kSeries;
        baseline.runs = history;
      } else {
        baseline.kind = RegressBaselineKind::kPromoted;
      }
      break;
  }
  return baseline;
}

std::optional<RegressReport> RegressCommand::JudgeSubmission(
    const std::vector<v1::Run>& runs, const RegressOptions& options,
    const std::vector<v1::Run>& named_run) {
  if (std::string error = UnscoredRunError(runs); !error.empty()) {
    RegressReport report;
    report.name = runs.front().spec().name();
    for (const v1::Run& run : runs) report.run_ids.push_back(run.id());
    report.error = std::move(error);
    return report;
  }
  std::vector<v1::Run> history;
  if (!ReadSeries(runs, options.window, history)) return std::nullopt;
  std::optional<Baseline> baseline =
      ChooseBaseline(runs.front().spec(), options, named_run, history);
  if (!baseline.has_value()) return std::nullopt;
  RegressReport report =
      CompareRegress(runs, baseline->runs, history, baseline->kind, options,
                     baseline->file_values);
  // The series' change points; a coordinator that keeps none (an older
  // one) leaves the verdicts as they are.
  v1::ListChangesRequest request;
  request.set_series(RegressSeriesKey(runs.front().spec()));
  v1::ListChangesResponse changes;
  if (client_
          .Unary(&v1::ClientService::StubInterface::ListChanges, request,
                 &changes)
          .ok()) {
    AddChangeContexts({changes.changes().begin(), changes.changes().end()},
                      options.window, report);
  }
  return report;
}

int RegressCommand::Run(const std::string& spec_source,
                        const std::string& spec_yaml,
                        const RegressOptions& options, bool json) {
  // A baseline run is checked before anything is submitted.
  std::vector<v1::Run> named_run;
  if (options.baseline == RegressBaselineKind::kRun &&
      !ReadBaselineRun(options.baseline_run, named_run)) {
    return kExitFailed;
  }
  // With --json, stdout carries the report alone.
  RunWatcher live({client_, json ? err_ : out_, err_});
  std::vector<v1::Run> runs;
  const int watched = live.Submit(spec_source, spec_yaml, /*wait=*/true, &runs);
  if (runs.empty()) return watched;  // refused or not submitted: reported

  std::vector<RegressReport> reports;
  for (const std::vector<v1::Run>& submission : BySubmission(std::move(runs))) {
    std::optional<RegressReport> report =
        JudgeSubmission(submission, options, named_run);
    if (!report.has_value()) return kExitFailed;
    reports.push_back(*std::move(report));
  }
  absl::StatusOr<Suite> suite = ParseSuite(spec_yaml);
  const std::string suite_name =
      suite.ok() ? suite->name : reports.front().name;
  if (json) {
    out_ << (reports.size() == 1 ? RegressReportJson(reports.front())
                                 : RegressSuiteJson(suite_name, reports));
  } else {
    out_ << FormatRegressReports(reports);
  }
  out_.flush();
  if (!WriteReportFiles(options, suite_name, reports)) return kExitFailed;
  const RegressTally tally = TallyRegressReports(reports);
  if (tally.failed > 0) return kExitFailed;
  return tally.regressed > 0 ? kExitRegressed : kExitOk;
}

bool RegressCommand::WriteReportFiles(
    const RegressOptions& options, const std::string& suite_name,
    const std::vector<RegressReport>& reports) {
  for (const auto& [path, what, text] :
       {std::tuple<const std::string&, const char*, std::string>{
            options.junit_path, "JUnit",
            options.junit_path.empty() ? ""
                                       : RegressJUnitXml(suite_name, reports)},
        {options.markdown_path, "Markdown",
         options.markdown_path.empty() ? ""
                                       : RegressMarkdown(suite_name, reports)},
        {options.json_path, "JSON",
         options.json_path.empty() ? ""
                                   : RegressSuiteJson(suite_name, reports)}}) {
    if (path.empty()) continue;
    if (!WriteTextFile(path, text)) {
      err_ << "hpcai500: cannot write " << what << " file '" << path
           << "': " << std::strerror(errno) << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace hpcai500
