// `hpcai500 regress`: judging finished runs against a baseline for nightly
// CI, one verdict per spec of a suite and metric. The baseline (the median
// of a series of earlier runs of the same benchmark, the newest good one, a
// promoted or named run, or fixed values from a file or --reference), the
// tolerance band learned from the series' history (methodology/regress_band.h)
// and the verdict per metric. Pure functions: the flags are read in
// cli/regress/regress_flags.h, the reports written in
// cli/regress/regress_report.h, the RPCs made in cli/regress/regress_command.h.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_REGRESS_REGRESS_H_
#define HPCAI500_CLI_REGRESS_REGRESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "methodology/regress_band.h"
#include "methodology/scoring.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// Where a spec's baseline comes from (--baseline).
enum class RegressBaselineKind {
  kSeries,    // the median of the series' newest good runs
  kPromoted,  // the run `hpcai500 baseline promote` made the baseline
  kLastGood,  // the series' newest good run
  kRun,       // one run named by --baseline RUN
  kFile,      // values per spec from a JSON file (--baseline FILE)
};
// "series", "promoted", "last-good", "run", "file".
std::string RegressBaselineKindName(RegressBaselineKind kind);

// What `regress` was asked on its command line.
struct RegressOptions {
  // Newest good runs of the series the band learns from (and the series
  // baseline's median takes).
  int window = kDefaultRegressWindow;
  // kSeries here means the default: the promoted baseline when the series
  // has one, else the series.
  RegressBaselineKind baseline = RegressBaselineKind::kSeries;
  int64_t baseline_run = 0;   // kRun: judge against this run
  std::string baseline_file;  // kFile
  // kFile: the file's values per spec name (ParseRegressBaselineFile), read
  // by the command line before anything is submitted.
  std::map<std::string, std::map<RegressMetric, double>> file_values;
  // Fixed baseline values (ReFrame-style references); they replace the runs
  // for their metrics, and their metrics are judged even without --metric.
  std::map<RegressMetric, double> references;
  // The fixed band without enough history: a move of more than this percent
  // in the bad direction regresses.
  double tolerance_pct = 5;
  // Repetitions whose throughput (and FLOPS, Valid FLOPS) varies by more
  // than this coefficient of variation, in percent, are unrepeatable: the
  // leaderboard's default limit (hpcai500d --max-throughput-cv).
  double max_cv_pct = kDefaultMaxThroughputCvPct;
  BandOptions band;                    // its fixed_pct is tolerance_pct
  std::vector<RegressMetric> metrics;  // empty: all but flops
  std::string junit_path;              // empty: no JUnit file
  std::string markdown_path;           // empty: no Markdown summary
  std::string json_path;               // empty: no JSON file
};

// Whether two runs belong to one series: the same RegressSeriesKey.
bool SameRegressSeries(const v1::RunSpec& a, const v1::RunSpec& b);

// Whether `run` is a good run of `spec`'s series: the same series, succeeded
// with a score, and its result not invalidated (an invalidated result is no
// baseline, as `baseline promote` refuses it).
bool IsGoodSeriesRun(const v1::Run& run, const v1::RunSpec& spec);

// The series baseline of `spec` among `runs` (any order): its good runs
// (IsGoodSeriesRun), the newest (highest id) `window` of them, newest first.
std::vector<v1::Run> SelectRegressSeries(const std::vector<v1::Run>& runs,
                                         const v1::RunSpec& spec, int window);

enum class RegressVerdict { kNoBaseline, kOk, kRegressed, kImproved };

struct MetricComparison {
  RegressMetric metric = RegressMetric::kThroughput;
  std::optional<double> baseline;  // empty: nothing to compare with
  bool from_reference = false;     // else from the report's baseline runs
  // This submission's runs (median over repetitions); empty for time to
  // target when none reached the target.
  std::optional<double> value;
  // The coefficient of variation of this submission's repetitions, in
  // percent; empty below two values.
  std::optional<double> spread_pct;
  // Throughput, FLOPS and Valid FLOPS: spread_pct above max_cv_pct.
  bool unrepeatable = false;
  std::optional<double> change_pct;  // empty without a positive baseline
  // Around the baseline; set whenever baseline and value are.
  std::optional<ToleranceBand> band;
  std::vector<int64_t> evidence;  // the history runs the band learned from
  RegressVerdict verdict = RegressVerdict::kNoBaseline;
  // Why, for kRegressed and kImproved: the metric, the move, the band and
  // the evidence (and the change context, below).
  std::string reason;
  // Beside the series' change points: start of a change, part of an
  // earlier one, or noise, with what changed (cli/regress/regress_changes.h);
  // empty when the coordinator keeps none.
  std::string change_context;
};

struct RegressReport {
  std::string name;                    // the spec name
  std::vector<int64_t> run_ids;        // this submission's runs
  std::vector<int64_t> baseline_runs;  // newest first; empty: none yet
  RegressBaselineKind baseline_kind = RegressBaselineKind::kSeries;
  double tolerance_pct = 5;  // the fixed band
  std::vector<MetricComparison> metrics;
  // Set when a run of this submission did not finish with a score; then
  // nothing is compared.
  std::string error;

  bool regressed() const;
};

// What a suite's reports add up to: the verdicts of the specs whose runs
// were compared, how many of those regressed, and the specs whose runs
// failed (RegressReport::error).
struct RegressTally {
  int verdicts = 0;
  int regressed = 0;
  int failed = 0;
};
RegressTally TallyRegressReports(const std::vector<RegressReport>& reports);

// Compares `current` (this submission's runs, all succeeded with a score)
// with `baseline` (runs succeeded with a score; may be empty) per metric,
// `kind` saying where they came from. Each metric's centre is the median of
// the baseline runs or its reference (options.references, then
// `file_values`); its band is learned from `history` (the series' good
// runs, newest first) by LearnBand with options.band, or fixed at
// options.tolerance_pct with too little history. A metric regresses when it
// lies outside the band in its bad direction (down, or up for time to
// target), improves outside it in the good one. Quality also regresses when
// most baseline runs reached their target and most of `current` did not
// (not for a quality reference), and time to target when the baseline
// reached the target and no current run did.
RegressReport CompareRegress(
    const std::vector<v1::Run>& current, const std::vector<v1::Run>& baseline,
    const std::vector<v1::Run>& history, RegressBaselineKind kind,
    const RegressOptions& options,
    const std::map<RegressMetric, double>& file_values = {});
// The series baseline: `baseline` is the history too.
RegressReport CompareRegress(const std::vector<v1::Run>& current,
                             const std::vector<v1::Run>& baseline,
                             const RegressOptions& options);

// "ok", "REGRESSED", "improved", "no baseline".
std::string RegressVerdictName(RegressVerdict verdict);
// The same as a JSON value: "ok", "regressed", "improved", "no_baseline".
std::string RegressVerdictJsonName(RegressVerdict verdict);

// The wording that the verdicts' reasons and the reports
// (cli/regress/regress_report.h) share.
// A metric's value in its unit: "1052.0 samples/s", "1.23 TFLOPS",
// "0.7630", "12.5 s".
std::string FormatRegressValue(RegressMetric metric, double value);
// The same, or for no value "not reached" (time to target) or "-".
std::string FormatRegressValue(RegressMetric metric,
                               const std::optional<double>& value);
// "run 7" or "runs 7, 6, 5".
std::string FormatRunIds(const std::vector<int64_t>& ids);
// The band's half width: "±8.1%".
std::string FormatBandWidth(const ToleranceBand& band);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_REGRESS_H_
