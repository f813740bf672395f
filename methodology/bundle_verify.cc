// Offline verification of result bundles: see bundle_verify.h.
#include "methodology/bundle_verify.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "methodology/convergence.h"
#include "methodology/global_batch.h"
#include "methodology/mllog_rules.h"
#include "methodology/regress_band.h"
#include "methodology/scoring.h"
#include "methodology/site_key.h"

namespace hpcai500 {
namespace {

constexpr double kRelativeTolerance = 1e-9;

std::string MllogPath(int64_t run_id, int32_t attempt, int32_t rank) {
  return absl::StrCat("runs/", run_id, "/attempt-", attempt, "/rank-", rank,
                      ".mllog");
}

// The lines of one MLLOG file; InvalidArgument naming the file and line.
absl::StatusOr<std::vector<EventLine>> ParseMllog(const std::string& path,
                                                  absl::string_view text) {
  std::vector<EventLine> lines;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<EventLine> parsed =
        ParseEventLine(std::string_view(line.data(), line.size()));
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " line ", number, ": ", parsed.status().message()));
    }
    lines.push_back(*std::move(parsed));
  }
  return lines;
}

// Every rank's lines of `attempt` of `bundled`, rank after rank.
absl::StatusOr<std::vector<EventLine>> AttemptLines(const BundledRun& bundled,
                                                    int32_t attempt) {
  std::vector<EventLine> lines;
  for (const auto& [key, text] : bundled.mllog) {
    if (key.first != attempt) continue;
    ASSIGN_OR_RETURN(
        std::vector<EventLine> rank_lines,
        ParseMllog(MllogPath(bundled.run.id(), key.first, key.second), text));
    lines.insert(lines.end(), std::make_move_iterator(rank_lines.begin()),
                 std::make_move_iterator(rank_lines.end()));
  }
  return lines;
}

const v1::Attempt* FindAttempt(const v1::Run& run, int32_t number) {
  for (const v1::Attempt& attempt : run.attempts()) {
    if (attempt.number() == number) return &attempt;
  }
  return nullptr;
}

bool Close(double a, double b) {
  return std::fabs(a - b) <=
         kRelativeTolerance * std::max({std::fabs(a), std::fabs(b), 1e-300});
}

// The mllog check of one run: every rank of every attempt it holds, and
// every rank of its last attempt present.
absl::Status CheckRunMllog(const BundledRun& bundled) {
  const v1::Run& run = bundled.run;
  if (run.attempts().empty()) {
    return absl::InvalidArgumentError("the run has no attempt");
  }
  const int32_t last = run.attempts().rbegin()->number();
  const int32_t world = std::max(1, run.spec().nodes()) *
                        std::max(1, run.spec().ranks_per_node());
  for (int32_t rank = 0; rank < world; ++rank) {
    if (bundled.mllog.count({last, rank}) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(MllogPath(run.id(), last, rank), ": missing"));
    }
  }
  for (const auto& [key, text] : bundled.mllog) {
    const std::string path = MllogPath(run.id(), key.first, key.second);
    if (FindAttempt(run, key.first) == nullptr || key.second >= world) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": no such attempt or rank in the run"));
    }
    ASSIGN_OR_RETURN(const std::vector<EventLine> lines,
                     ParseMllog(path, text));
    absl::Status rules =
        CheckMllogRules(lines, key.second, /*finished=*/key.first == last);
    if (!rules.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", rules.message()));
    }
  }
  return absl::OkStatus();
}

// Whether `a` and `b` are the same reference points.
bool SameReferences(const std::vector<ReferenceConvergence>& a,
                    const std::vector<ReferenceConvergence>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].workload != b[i].workload || a[i].config != b[i].config ||
        a[i].global_batch != b[i].global_batch || a[i].epochs != b[i].epochs) {
      return false;
    }
  }
  return true;
}

// The convergence check: the bundle's references against the registry's,
// and, with a submission row, the verdict and factor recomputed.
BundleCheck CheckConvergenceClaim(const BundleReport& report,
                                  const Registry& registry,
                                  ConvergenceResult* result) {
  const BundleContents& contents = *report.contents;
  const v1::RunSpec& spec = contents.runs.front().run.spec();
  BundleCheck check{"convergence", false, ""};
  if (!SameReferences(contents.references,
                      registry.References(spec.workload(), spec.config()))) {
    check.detail = absl::StrCat(
        "references.json: the reference points differ from this registry's "
        "for ",
        spec.workload(), "/", spec.config());
    return check;
  }
  std::vector<std::optional<double>> epochs;
  for (const BundledRun& bundled : contents.runs) {
    v1::Run recomputed = bundled.run;
    auto score = report.recomputed.find(bundled.run.id());
    if (score == report.recomputed.end()) {
      check.detail = absl::StrCat("run ", bundled.run.id(), " not recomputed");
      return check;
    }
    *recomputed.mutable_score() = score->second.score;
    *recomputed.mutable_epochs() = {score->second.epochs.begin(),
                                    score->second.epochs.end()};
    epochs.push_back(EpochsToTarget(recomputed));
  }
  *result = CheckConvergence(epochs, GlobalBatch(spec, registry),
                             contents.references);
  const std::string verdict = ConvergenceVerdictName(result->verdict);
  if (contents.submission.has_value()) {
    const v1::ConvergenceCheck& claimed = contents.submission->convergence();
    if (claimed.verdict() != verdict ||
        !Close(claimed.factor(), result->factor)) {
      check.detail = absl::StrFormat(
          "submission.json claims %s (factor %g); recomputed: %s (factor %g)",
          claimed.verdict(), claimed.factor(), verdict, result->factor);
      return check;
    }
  }
  check.ok = true;
  check.detail = absl::StrFormat("%s, factor %g (%d reference points)", verdict,
                                 result->factor, contents.references.size());
  return check;
}

// The submission check: the row's runs and Valid FLOPS recomputed.
BundleCheck CheckSubmissionClaim(const BundleReport& report,
                                 const ConvergenceResult& convergence) {
  const v1::LeaderboardRow& row = *report.contents->submission;
  BundleCheck check{"submission", false, ""};
  std::vector<int64_t> ids;
  std::vector<double> values;
  for (const BundledRun& bundled : report.contents->runs) {
    ids.push_back(bundled.run.id());
    values.push_back(
        report.recomputed.at(bundled.run.id()).score.valid_flops());
  }
  std::vector<int64_t> claimed_ids(row.run_ids().begin(), row.run_ids().end());
  std::sort(claimed_ids.begin(), claimed_ids.end());
  if (claimed_ids != ids) {
    check.detail = "submission.json: its run ids are not the bundle's runs";
    return check;
  }
  const double valid_flops =
      AggregateRepetitions(values).mean / convergence.factor;
  if (!Close(row.valid_flops(), valid_flops)) {
    check.detail = absl::StrFormat(
        "submission.json claims Valid FLOPS %.17g; recomputed %.17g",
        row.valid_flops(), valid_flops);
    return check;
  }
  check.ok = true;
  check.detail =
      absl::StrFormat("Valid FLOPS %.6g over %d runs", valid_flops, ids.size());
  return check;
}

// The digests check: every listed file there with its size and SHA-256,
// and nothing unlisted.
BundleCheck CheckDigests(const OpenedBundle& opened) {
  BundleCheck check{"digests", false, ""};
  std::set<std::string> listed;
  for (const BundleManifest::File& file : opened.manifest.files) {
    listed.insert(file.path);
    auto it = opened.files.find(file.path);
    if (it == opened.files.end()) {
      check.detail = absl::StrCat(file.path, ": listed but missing");
      return check;
    }
    if (static_cast<int64_t>(it->second.size()) != file.bytes ||
        Sha256Hex(it->second) != file.sha256) {
      check.detail =
          absl::StrCat(file.path, ": SHA-256 does not match the manifest");
      return check;
    }
  }
  for (const auto& [path, data] : opened.files) {
    if (listed.count(path) == 0) {
      check.detail = absl::StrCat(path, ": not in the manifest");
      return check;
    }
  }
  check.ok = true;
  check.detail = absl::StrCat(listed.size(), " files match");
  return check;
}

}  // namespace

bool BundleReport::ok() const { return !checks.empty() && !FirstFailure(); }

const BundleCheck* BundleReport::FirstFailure() const {
  for (const BundleCheck& check : checks) {
    if (!check.ok) return &check;
  }
  return nullptr;
}

absl::StatusOr<RecomputedRun> RecomputeRun(const BundledRun& bundled,
                                           const Registry& registry) {
  const v1::Run& run = bundled.run;
  const ConfigInfo* config =
      registry.FindConfig(run.spec().workload(), run.spec().config());
  const WorkloadInfo* workload = registry.FindWorkload(run.spec().workload());
  if (config == nullptr || workload == nullptr) {
    return absl::NotFoundError(absl::StrCat(run.spec().workload(), "/",
                                            run.spec().config(),
                                            " is not in this registry"));
  }
  if (run.attempts().empty()) {
    return absl::FailedPreconditionError("the run has no attempt");
  }
  const v1::Attempt* current = &*run.attempts().rbegin();
  ASSIGN_OR_RETURN(std::vector<EventLine> final_lines,
                   AttemptLines(bundled, current->number()));
  RecomputedRun recomputed;
  if (current->resumed_epoch() <= 0) {
    recomputed.epochs = SummarizeEpochs(final_lines);
    ASSIGN_OR_RETURN(recomputed.score,
                     ScoreRun(final_lines, *config, *workload));
    return recomputed;
  }
  // A resumed run: the chain of attempts whose checkpoints it resumed from,
  // as the coordinator followed it (server/coordinator/run_scoring.cc).
  std::vector<AttemptEvents> chain;
  chain.push_back({std::move(final_lines), current->resumed_epoch(), -1});
  int through = current->resumed_epoch();
  int from = current->resume_from_attempt();
  while (through > 0) {
    const v1::Attempt* earlier = FindAttempt(run, from);
    if (earlier == nullptr || from >= current->number()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "attempt %d resumed from attempt %d, which is not an earlier one",
          current->number(), from));
    }
    current = earlier;
    AttemptEvents part;
    part.through_epoch = through;
    part.after_epoch = current->resumed_epoch();
    ASSIGN_OR_RETURN(part.events, AttemptLines(bundled, current->number()));
    chain.push_back(std::move(part));
    through = current->resumed_epoch();
    from = current->resume_from_attempt();
  }
  std::reverse(chain.begin(), chain.end());
  recomputed.resumed = true;
  recomputed.epochs = SummarizeEpochs(KeptEvents(chain));
  ASSIGN_OR_RETURN(recomputed.score, ScoreAttempts(chain, *config, *workload));
  return recomputed;
}

std::string EpochsDifference(
    const google::protobuf::RepeatedPtrField<v1::EpochSummary>& claimed,
    const std::vector<v1::EpochSummary>& recomputed) {
  if (static_cast<size_t>(claimed.size()) != recomputed.size()) {
    return absl::StrFormat("%d epochs claimed, %d in the MLLOG", claimed.size(),
                           recomputed.size());
  }
  for (size_t i = 0; i < recomputed.size(); ++i) {
    const v1::EpochSummary& a = claimed[static_cast<int>(i)];
    const v1::EpochSummary& b = recomputed[i];
    if (a.epoch() != b.epoch() || a.samples() != b.samples() ||
        !Close(a.seconds(), b.seconds()) ||
        !Close(a.accuracy(), b.accuracy())) {
      return absl::StrFormat(
          "epoch %d: claimed %d samples in %g s, accuracy %g; the MLLOG has "
          "%d samples in %g s, accuracy %g",
          b.epoch(), a.samples(), a.seconds(), a.accuracy(), b.samples(),
          b.seconds(), b.accuracy());
    }
  }
  return "";
}

std::string ScoreDifference(const v1::Score& claimed,
                            const v1::Score& recomputed) {
  const std::pair<const char*, std::pair<double, double>> numbers[] = {
      {"quality", {claimed.quality(), recomputed.quality()}},
      {"target", {claimed.target(), recomputed.target()}},
      {"exponent", {claimed.exponent(), recomputed.exponent()}},
      {"forward_flops_per_sample",
       {claimed.forward_flops_per_sample(),
        recomputed.forward_flops_per_sample()}},
      {"samples",
       {static_cast<double>(claimed.samples()),
        static_cast<double>(recomputed.samples())}},
      {"train_seconds", {claimed.train_seconds(), recomputed.train_seconds()}},
      {"eval_seconds", {claimed.eval_seconds(), recomputed.eval_seconds()}},
      {"flops", {claimed.flops(), recomputed.flops()}},
      {"valid_flops", {claimed.valid_flops(), recomputed.valid_flops()}},
      {"energy_joules", {claimed.energy_joules(), recomputed.energy_joules()}},
      {"valid_flops_per_watt",
       {claimed.valid_flops_per_watt(), recomputed.valid_flops_per_watt()}},
      {"lost_seconds", {claimed.lost_seconds(), recomputed.lost_seconds()}},
  };
  for (const auto& [name, values] : numbers) {
    if (!Close(values.first, values.second)) {
      return absl::StrFormat("%s: claimed %.17g, recomputed %.17g", name,
                             values.first, values.second);
    }
  }
  if (claimed.reached_target() != recomputed.reached_target()) {
    return absl::StrCat("reached_target: claimed ",
                        claimed.reached_target() ? "true" : "false");
  }
  if (claimed.convention() != recomputed.convention()) {
    return absl::StrCat("convention: claimed '", claimed.convention(),
                        "', recomputed '", recomputed.convention(), "'");
  }
  return "";
}

BundleReport VerifyBundle(absl::string_view bytes, const Registry& registry,
                          const VerifyOptions& options) {
  BundleReport report;
  absl::StatusOr<OpenedBundle> opened = OpenBundle(bytes, options.limits);
  if (!opened.ok()) {
    absl::string_view message = opened.status().message();
    const bool archive = absl::ConsumePrefix(&message, "archive: ");
    if (!archive) absl::ConsumePrefix(&message, "manifest: ");
    if (!archive) {
      report.checks.push_back({"archive", true, "gzip-compressed ustar"});
    }
    report.checks.push_back(
        {archive ? "archive" : "manifest", false, std::string(message)});
    return report;
  }
  report.manifest = opened->manifest;
  report.checks.push_back(
      {"archive", true, absl::StrCat(opened->files.size() + 2, " files")});
  report.checks.push_back(
      {"manifest", true,
       absl::StrCat(opened->manifest.subject, ", ",
                    opened->manifest.files.size(), " files listed")});
  const absl::Status signed_ok = VerifySignature(
      opened->manifest.site_key, opened->manifest_text, opened->signature);
  report.checks.push_back(
      {"signature", signed_ok.ok(),
       signed_ok.ok()
           ? absl::StrCat("Ed25519 by site key ", opened->manifest.site_key)
           : std::string(signed_ok.message())});
  if (!options.expected_site_key.empty()) {
    const bool same = options.expected_site_key == opened->manifest.site_key;
    report.checks.push_back(
        {"site key", same,
         same ? "the expected one"
              : absl::StrCat("signed by ", opened->manifest.site_key,
                             ", expected ", options.expected_site_key)});
  }
  report.checks.push_back(CheckDigests(*opened));
  absl::StatusOr<BundleContents> contents = ParseBundleFiles(opened->files);
  if (!contents.ok()) {
    report.checks.push_back(
        {"contents", false, std::string(contents.status().message())});
    return report;
  }
  report.checks.push_back(
      {"contents", true, absl::StrCat(contents->runs.size(), " runs")});
  report.contents = *std::move(contents);
  for (const BundledRun& bundled : report.contents->runs) {
    const std::string id = absl::StrCat(bundled.run.id());
    const absl::Status mllog = CheckRunMllog(bundled);
    report.checks.push_back(
        {absl::StrCat("mllog run ", id), mllog.ok(),
         mllog.ok() ? absl::StrCat(bundled.mllog.size(),
                                   " rank logs keep MLCommons' rules")
                    : std::string(mllog.message())});
    absl::StatusOr<RecomputedRun> recomputed = RecomputeRun(bundled, registry);
    BundleCheck check{absl::StrCat("score run ", id), false, ""};
    if (!recomputed.ok()) {
      check.detail = std::string(recomputed.status().message());
    } else {
      report.recomputed[bundled.run.id()] = *recomputed;
      const v1::Score& score = recomputed->score;
      check.detail = ScoreDifference(bundled.run.score(), score);
      if (!check.detail.empty()) {
        check.detail = absl::StrCat("runs/", id, "/score.json: ", check.detail);
      } else if (!recomputed->resumed) {
        // A resumed run's claimed epochs also carry those of earlier
        // attempts its checkpoint did not keep; its score counts the kept
        // ones only, as recomputed.
        check.detail =
            EpochsDifference(bundled.run.epochs(), recomputed->epochs);
        if (!check.detail.empty()) {
          check.detail = absl::StrCat("runs/", id, "/run.json: ", check.detail);
        }
      }
      check.ok = check.detail.empty();
      if (check.ok) {
        check.detail = absl::StrFormat(
            "FLOPS %.6g, Valid FLOPS %.6g recomputed from the MLLOG",
            score.flops(), score.valid_flops());
      }
    }
    report.checks.push_back(std::move(check));
  }
  if (report.recomputed.size() != report.contents->runs.size()) return report;
  ConvergenceResult convergence;
  report.checks.push_back(
      CheckConvergenceClaim(report, registry, &convergence));
  if (report.contents->submission.has_value() && report.checks.back().ok) {
    report.checks.push_back(CheckSubmissionClaim(report, convergence));
  }
  return report;
}

}  // namespace hpcai500
