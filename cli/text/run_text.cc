// What the CLI prints about runs (cli/text/run_text.h).
#include "cli/text/run_text.h"

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/text/format.h"
#include "common/printable.h"
#include "common/run_state.h"
#include "methodology/forecast.h"
#include "methodology/spec.h"

namespace hpcai500 {
namespace {

std::string SpecLayout(const v1::RunSpec& spec) {
  return absl::StrFormat("%d node%s x %d rank%s, %s, batch %d/rank, %s",
                         spec.nodes(), spec.nodes() == 1 ? "" : "s",
                         spec.ranks_per_node(),
                         spec.ranks_per_node() == 1 ? "" : "s", spec.device(),
                         spec.batch_size(), spec.precision());
}

// "  fast paths   fused_bn, cuda_graph" when the spec turns any on; empty
// otherwise, so that a run without them reads as before.
std::string FastPathsLine(const v1::RunSpec& spec) {
  const std::vector<std::string> on = FastPathsOn(spec);
  if (on.empty()) return "";
  return absl::StrCat("  fast paths   ", absl::StrJoin(on, ", "), "\n");
}

// The attempt history: where each ran, where it started from and why it
// ended (Slurm's requeue history, a Job's pod list).
std::string AttemptTable(const v1::Run& run, absl::TimeZone zone) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Attempt& a : run.attempts()) {
    std::string start = "epoch 1";
    if (a.resumed_epoch() > 0) {
      start = absl::StrFormat("resumed after epoch %d (attempt %d)",
                              a.resumed_epoch(), a.resume_from_attempt());
    } else if (a.resume_from_epoch() > 0) {
      start = absl::StrFormat("asked to resume after epoch %d",
                              a.resume_from_epoch());
    }
    rows.push_back({absl::StrCat(a.number()), a.state(),
                    absl::StrJoin(a.nodes(), ","),
                    FormatTimeMs(a.started_ms(), zone), start,
                    a.error().empty() ? "-" : a.error()});
  }
  return FormatTable(
      {"attempt", "state", "nodes", "started", "start", "ended by"}, rows,
      /*right_aligned=*/{0});
}

// Quality against target, FLOPS and Valid FLOPS, one indented line each.
// The run's own Valid FLOPS: the leaderboard may show its submission's
// divided by the convergence check's factor, so the line says which it is.
std::string ScoreSummary(const v1::Score& score) {
  return absl::StrCat(
      "  quality      ", FormatQualityVsTarget(score.quality(), score.target()),
      " (", score.reached_target() ? "reached" : "below target", ")\n",
      "  FLOPS        ", FormatFlops(score.flops()), "\n", "  Valid FLOPS  ",
      FormatFlops(score.valid_flops()), " (n = ", score.exponent(),
      "; before the leaderboard's convergence check)\n");
}

// Energy of the training epochs, the average power it means, and Valid FLOPS
// per watt (HPC AI500 V2.0); for a score with energy_joules > 0.
std::string EnergySummary(const v1::Score& score) {
  std::string text =
      absl::StrFormat("  energy       %.1f J", score.energy_joules());
  if (score.train_seconds() > 0) {
    absl::StrAppendFormat(&text, " (%.1f W average over %.2f s)",
                          score.energy_joules() / score.train_seconds(),
                          score.train_seconds());
  }
  absl::StrAppend(&text, "\n  per watt     ",
                  FormatFlops(score.valid_flops_per_watt()),
                  "/W (Valid FLOPS / average power)\n");
  return text;
}

// What each attempt's nodes were when it was placed (provenance), one line
// per attempt and node, under a "provenance" heading.
// Empty when no attempt kept an inventory.
std::string ProvenanceLines(const v1::Run& run) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Attempt& attempt : run.attempts()) {
    // In the attempt's node order (the map is unordered).
    for (const std::string& node : attempt.nodes()) {
      auto it = attempt.inventory().find(node);
      if (it == attempt.inventory().end()) continue;
      rows.push_back(
          {absl::StrCat(attempt.number()), node, FormatInventory(it->second)});
    }
  }
  if (rows.empty()) return "";
  return absl::StrCat("\nprovenance\n",
                      FormatTable({"attempt", "node", "inventory"}, rows,
                                  /*right_aligned=*/{0}));
}

// The fingerprint the run got as it ended (methodology/fingerprint.h), a
// field a line after a blank line, the spec's fields left out (the lines
// above show them); empty for a run without one.
std::string FingerprintLines(const v1::Run& run) {
  std::vector<std::vector<std::string>> rows;
  // Sorted by field: the proto map is unordered.
  const std::map<std::string, std::string> fields(
      run.fingerprint().fields().begin(), run.fingerprint().fields().end());
  for (const auto& [field, value] : fields) {
    if (absl::StartsWith(field, "spec.")) continue;
    rows.push_back({field, value});
  }
  if (rows.empty()) return "";
  return absl::StrCat("\nfingerprint\n", FormatTable({"field", "value"}, rows));
}

// The per-epoch table, after a blank line; empty without epochs.
std::string EpochTable(const v1::Run& run) {
  if (run.epochs_size() == 0) return "";
  std::vector<std::vector<std::string>> rows;
  for (const v1::EpochSummary& epoch : run.epochs()) {
    rows.push_back({absl::StrCat(epoch.epoch()), absl::StrCat(epoch.samples()),
                    absl::StrFormat("%.2f", epoch.seconds()),
                    absl::StrFormat("%.1f", epoch.throughput()),
                    absl::StrFormat("%.4f", epoch.train_loss()),
                    epoch.accuracy() < 0
                        ? std::string("-")
                        : absl::StrFormat("%.4f", epoch.accuracy())});
  }
  return absl::StrCat(
      "\n", FormatTable(
                {"epoch", "samples", "seconds", "samples/s", "loss", "quality"},
                rows, /*right_aligned=*/{0, 1, 2, 3, 4, 5}));
}

// The score block of `show`: the summary, then how it was measured.
std::string ScoreDetails(const v1::Score& score) {
  std::ostringstream out;
  out << "\nscore\n"
      << ScoreSummary(score) << "  samples      " << score.samples() << "\n"
      << "  forward      "
      << absl::StrFormat("%.4g", score.forward_flops_per_sample())
      << " FLOPs/sample\n"
      << "  train time   " << absl::StrFormat("%.2f", score.train_seconds())
      << " s (evaluation " << absl::StrFormat("%.2f", score.eval_seconds())
      << " s)\n"
      << "  convention   " << score.convention() << "\n";
  if (score.lost_seconds() > 0) {
    out << "  lost time    " << absl::StrFormat("%.2f", score.lost_seconds())
        << " s of earlier attempts after their last checkpoint (not in "
           "train time)\n";
  }
  if (score.energy_joules() > 0) out << EnergySummary(score);
  return out.str();
}

// The early-abort rule the spec asks for and the latest forecast ("not
// enough epochs yet" while a run has too few evaluations), one indented line
// each; empty for a run that asks for neither and has none.
std::string ForecastLines(const v1::Run& run) {
  const v1::RunSpec& spec = run.spec();
  std::string text;
  if (spec.abort_if_hopeless() > 0) {
    absl::StrAppendFormat(&text,
                          "  early abort  below %g%% chance, after epoch %d\n",
                          spec.abort_if_hopeless() * 100, spec.min_epochs());
  }
  if (run.has_forecast()) {
    absl::StrAppend(&text, "  forecast     ", ForecastText(run.forecast()),
                    "\n");
  } else if (run.state() == v1::RUN_STATE_RUNNING) {
    absl::StrAppend(&text, "  forecast     not enough epochs yet\n");
  }
  return text;
}

// What the run was asked to be, one indented line each: its spec (name,
// workload, level, system, layout, launcher, fast paths, seed, epochs), who
// submitted it and the queue it waits in.
std::string SpecLines(const v1::Run& run) {
  const v1::RunSpec& spec = run.spec();
  std::ostringstream out;
  out << "  name         " << spec.name() << "\n"
      << "  workload     " << spec.workload() << "/" << spec.config() << "\n"
      << "  level        " << spec.level() << ", "
      << (spec.ranked() ? "ranked" : "unranked") << "\n"
      << "  system       " << spec.system() << "\n"
      << "  user         " << (run.user().empty() ? "-" : run.user()) << "\n"
      << "  layout       " << SpecLayout(spec) << "\n"
      << "  launcher     "
      << (spec.launcher().empty() ? "agent" : spec.launcher()) << "\n"
      << "  queue        " << (run.queue().empty() ? "default" : run.queue())
      << ", priority " << run.priority()
      << (spec.time_limit_s() > 0
              ? absl::StrCat(
                    ", time limit ",
                    absl::FormatDuration(absl::Seconds(spec.time_limit_s())))
              : std::string())
      << "\n"
      << FastPathsLine(spec) << "  seed         " << spec.seed() << "\n"
      << "  epochs       " << spec.epochs() << "\n";
  return out.str();
}

// What became of the run, one indented line each: its times (in `zone`),
// and where set its error, why it waits and who invalidated its result.
std::string StateLines(const v1::Run& run, absl::TimeZone zone) {
  std::ostringstream out;
  out << "  created      " << FormatTimeMs(run.created_ms(), zone) << "\n"
      << "  started      " << FormatTimeMs(run.started_ms(), zone) << "\n"
      << "  finished     " << FormatTimeMs(run.finished_ms(), zone) << "\n";
  if (!run.error().empty()) {
    out << "  error        " << FormatIndentedText(run.error(), 15) << "\n";
  }
  if (!run.reason().empty()) {
    out << "  waiting      " << EscapeLine(run.reason()) << "\n";
  }
  if (!run.invalidated_by().empty()) {
    out << "  invalidated  by " << EscapeLine(run.invalidated_by()) << " at "
        << FormatTimeMs(run.invalidated_ms(), zone) << ": "
        << EscapeLine(run.invalidation_reason())
        << " (not on the leaderboard)\n";
  }
  return out.str();
}

}  // namespace

std::string FormatRunSummary(const v1::Run& run, absl::TimeZone zone) {
  std::string text = absl::StrCat(
      "run ", run.id(), " (submission ", run.submission_id(), ", repetition ",
      run.repetition(), "): ", RunStateName(run.state()), "\n", SpecLines(run),
      ForecastLines(run), StateLines(run, zone));
  if (run.attempts_size() > 1 ||
      (run.attempts_size() == 1 && !run.attempts(0).error().empty())) {
    absl::StrAppend(&text, "\n", AttemptTable(run, zone));
  }
  absl::StrAppend(&text, ProvenanceLines(run), FingerprintLines(run),
                  EpochTable(run));
  if (run.has_score()) absl::StrAppend(&text, ScoreDetails(run.score()));
  return text;
}

std::string FormatRunResult(const v1::Run& run) {
  std::string text =
      absl::StrCat("run ", run.id(), " ", RunStateName(run.state()));
  if (!run.error().empty()) {
    absl::StrAppend(&text, ": ", FormatIndentedText(run.error(), 2));
  }
  absl::StrAppend(&text, "\n");
  if (run.has_score()) absl::StrAppend(&text, ScoreSummary(run.score()));
  return text;
}

std::string FormatRunList(const std::vector<v1::Run>& runs,
                          absl::TimeZone zone) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Run& run : runs) {
    rows.push_back({absl::StrCat(run.id()), run.spec().name(),
                    run.spec().workload() + "/" + run.spec().config(),
                    RunStateName(run.state()),
                    run.user().empty() ? "-" : run.user(),
                    FormatTimeMs(run.created_ms(), zone)});
  }
  return FormatTable(
      {"id", "name", "workload/config", "state", "user", "created"}, rows,
      /*right_aligned=*/{0});
}

std::string FormatRunState(int64_t run_id, v1::RunState state) {
  return absl::StrCat("run ", run_id, ": ", RunStateName(state), "\n");
}

std::string FormatHeld(int64_t run_id, bool held, const v1::Run& run) {
  return absl::StrCat("run ", run_id, ": ",
                      held ? absl::StrCat("held by ", EscapeLine(run.held_by()))
                           : std::string("released"),
                      " (", RunStateName(run.state()), ")\n");
}

std::string FormatInvalidated(const v1::Run& run) {
  return absl::StrCat("run ", run.id(), ": result invalidated by ",
                      EscapeLine(run.invalidated_by()),
                      "; off the leaderboard\n");
}

std::string FormatPromoted(const v1::Baseline& baseline) {
  return absl::StrCat("run ", baseline.run_id(),
                      " is the regress baseline of its series now (promoted "
                      "by ",
                      baseline.promoted_by(), ")\n");
}

}  // namespace hpcai500
