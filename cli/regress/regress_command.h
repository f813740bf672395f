// `hpcai500 regress SPEC|SUITE`: submits the spec or suite, waits for its
// runs (cli/commands/watch.h), reads each spec's history and baseline from the
// coordinator, judges them (cli/regress/regress.h) and prints and writes the
// reports (cli/regress/regress_report.h).
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_REGRESS_REGRESS_COMMAND_H_
#define HPCAI500_CLI_REGRESS_REGRESS_COMMAND_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client/command_context.h"
#include "cli/client/coordinator_client.h"
#include "cli/regress/regress.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class RegressCommand {
 public:
  // What `context` lends is borrowed for the life of the object.
  explicit RegressCommand(const CommandContext& context);

  // Reads options.baseline_run if set, submits the spec or suite and waits
  // like RunWatcher::Submit, then, per spec, reads the newest
  // options.window good runs of its series submitted before these (the
  // band's history) and its baseline (options.baseline; by default the
  // promoted one, else the series), and prints the comparison of each
  // metric (as JSON with `json`; the live output then goes to err) and
  // writes options.junit_path, markdown_path and json_path if set. Returns
  // kExitOk (also with no baseline yet), kExitRegressed, kExitRefused, or
  // kExitFailed when a run did not finish with a score, a baseline run has
  // no score, or on any error.
  int Run(const std::string& spec_source, const std::string& spec_yaml,
          const RegressOptions& options, bool json);

 private:
  // A submission's baseline: where it came from, and its runs or, from a
  // --baseline FILE, its values.
  struct Baseline {
    RegressBaselineKind kind = RegressBaselineKind::kSeries;
    std::vector<v1::Run> runs;
    std::map<RegressMetric, double> file_values;
  };

  // Regress's baseline run, read before it submits; false after printing
  // why it cannot be one.
  bool ReadBaselineRun(int64_t run_id, std::vector<v1::Run>& baseline);
  // The promoted baseline run of `spec`'s series into `baseline` (left
  // empty when none was promoted). False after printing why not.
  bool ReadPromotedBaseline(const v1::RunSpec& spec,
                            std::vector<v1::Run>& baseline);
  // The series baseline of `runs` (one submission): the newest `window`
  // succeeded, scored runs of the same series with lower ids, asked of the
  // coordinator by name, workload, config and state. False after printing
  // an RPC error.
  bool ReadSeries(const std::vector<v1::Run>& runs, int window,
                  std::vector<v1::Run>& series);
  // The baseline of `spec`'s submission as options.baseline asks: the
  // --baseline RUN (`named_run`, read already), the FILE's values, the
  // newest of `history` (the series' good runs, newest first), or by
  // default the promoted run, else the series. Nullopt after printing an
  // RPC error.
  std::optional<Baseline> ChooseBaseline(const v1::RunSpec& spec,
                                         const RegressOptions& options,
                                         const std::vector<v1::Run>& named_run,
                                         const std::vector<v1::Run>& history);
  // The report for one submission's `runs`; nullopt after printing an RPC
  // error. `named_run`: the --baseline RUN, read already.
  std::optional<RegressReport> JudgeSubmission(
      const std::vector<v1::Run>& runs, const RegressOptions& options,
      const std::vector<v1::Run>& named_run);
  // Writes the JUnit, Markdown and JSON files `options` names; false after
  // printing which one could not be written.
  bool WriteReportFiles(const RegressOptions& options,
                        const std::string& suite_name,
                        const std::vector<RegressReport>& reports);

  // Constant after construction.
  const CoordinatorClient& client_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_REGRESS_COMMAND_H_
