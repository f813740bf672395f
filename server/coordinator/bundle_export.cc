// The export of result bundles: see bundle_export.h.
#include "server/coordinator/bundle_export.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/events.h"
#include "common/run_state.h"
#include "common/status_macros.h"
#include "methodology/bundle.h"
#include "methodology/bundle_verify.h"

namespace hpcai500 {
namespace {

// The most runs a submission may have (the coordinator's list limit).
constexpr int kMaxSubmissionRuns = 10'000;

absl::Status CheckExportable(const v1::Run& run) {
  if (!HasValidResult(run)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run.id(),
        " has no result to export: only a succeeded, scored run that was "
        "not invalidated has one"));
  }
  return absl::OkStatus();
}

// The MLLOG lines of one rank of one attempt as stored (the lines the
// coordinator refused at intake left out).
absl::StatusOr<std::string> RankMllog(CoordinatorView& reads, int64_t run_id,
                                      int32_t attempt, int32_t rank) {
  ASSIGN_OR_RETURN(const std::string text,
                   reads.RankLogText(run_id, attempt, rank,
                                     CoordinatorView::RankLog::kEvents));
  std::string lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, absl::string_view(kMllogPrefix.data(),
                                                  kMllogPrefix.size()))) {
      continue;
    }
    absl::StrAppend(&lines, line, "\n");
  }
  return lines;
}

absl::StatusOr<BundledRun> BundleRun(CoordinatorView& reads,
                                     const v1::Run& run) {
  BundledRun bundled;
  bundled.run = run;
  bundled.run.clear_reason();
  const int32_t world = std::max(1, run.spec().nodes()) *
                        std::max(1, run.spec().ranks_per_node());
  for (const v1::Attempt& attempt : run.attempts()) {
    for (int32_t rank = 0; rank < world; ++rank) {
      ASSIGN_OR_RETURN(std::string lines,
                       RankMllog(reads, run.id(), attempt.number(), rank));
      if (!lines.empty()) {
        bundled.mllog[{attempt.number(), rank}] = std::move(lines);
      }
    }
  }
  return bundled;
}

// The runs of `request`, each exportable, by id; and the subject.
absl::StatusOr<std::vector<v1::Run>> SubjectRuns(
    CoordinatorView& reads, const v1::ExportBundleRequest& request) {
  if (request.run_id() > 0) {
    ASSIGN_OR_RETURN(v1::Run run, reads.GetRun(request.run_id()));
    RETURN_IF_ERROR(CheckExportable(run));
    return std::vector<v1::Run>{std::move(run)};
  }
  v1::ListRunsRequest filter;
  filter.set_submission_id(request.submission_id());
  filter.set_limit(kMaxSubmissionRuns);
  ASSIGN_OR_RETURN(v1::ListRunsResponse listed, reads.ListRuns(filter));
  if (listed.runs().empty()) {
    return absl::NotFoundError(
        absl::StrCat("no submission ", request.submission_id()));
  }
  std::vector<v1::Run> runs(listed.runs().begin(), listed.runs().end());
  std::sort(runs.begin(), runs.end(),
            [](const v1::Run& a, const v1::Run& b) { return a.id() < b.id(); });
  for (const v1::Run& run : runs) RETURN_IF_ERROR(CheckExportable(run));
  const int repetitions = std::max(1, runs.front().spec().repetitions());
  if (static_cast<int>(runs.size()) < repetitions) {
    return absl::FailedPreconditionError(
        absl::StrCat("submission ", request.submission_id(), " has ",
                     runs.size(), " of its ", repetitions, " runs"));
  }
  return runs;
}

}  // namespace

absl::StatusOr<v1::ExportBundleResponse> ExportBundle(
    CoordinatorView& reads, const Registry& registry, const SiteKey& key,
    const v1::ExportBundleRequest& request, int64_t now_ms) {
  if ((request.run_id() > 0) == (request.submission_id() > 0)) {
    return absl::InvalidArgumentError(
        "export: give a run id or a submission id (one of them)");
  }
  ASSIGN_OR_RETURN(const std::vector<v1::Run> runs,
                   SubjectRuns(reads, request));
  BundleContents contents;
  for (const v1::Run& run : runs) {
    ASSIGN_OR_RETURN(BundledRun bundled, BundleRun(reads, run));
    contents.runs.push_back(std::move(bundled));
  }
  const v1::RunSpec& spec = runs.front().spec();
  contents.references = registry.References(spec.workload(), spec.config());
  std::string subject = absl::StrCat("run ", request.run_id());
  if (request.submission_id() > 0) {
    subject = absl::StrCat("submission ", request.submission_id());
    v1::LeaderboardRequest row;
    row.set_submission_id(request.submission_id());
    ASSIGN_OR_RETURN(const v1::LeaderboardResponse board,
                     reads.Leaderboard(row));
    if (!board.rows().empty()) contents.submission = board.rows(0);
  }
  ASSIGN_OR_RETURN(const std::vector<ArchiveEntry> files,
                   BundleFiles(contents));
  v1::ExportBundleResponse response;
  ASSIGN_OR_RETURN(*response.mutable_bundle(),
                   SealBundle(files, key, subject, now_ms));
  const BundleReport report = VerifyBundle(response.bundle(), registry);
  if (const BundleCheck* failed = report.FirstFailure()) {
    return absl::FailedPreconditionError(absl::StrCat(
        subject, " would not verify: ", failed->name, ": ", failed->detail));
  }
  response.set_site_key(key.PublicKeyHex());
  response.set_subject(subject);
  return response;
}

}  // namespace hpcai500
