// What `hpcai500 regress` is asked: its flag values and a --baseline FILE,
// read into RegressOptions (cli/regress/regress.h).
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_REGRESS_REGRESS_FLAGS_H_
#define HPCAI500_CLI_REGRESS_REGRESS_FLAGS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/regress/regress.h"

namespace hpcai500 {

// The baseline values a --baseline FILE holds per spec name, read from what
// --json-file (or --json) wrote: a suite object {"specs": [report, ...]} or
// one report, each report {"name": ..., "metrics": [{"metric": ...,
// "value": ...}, ...]}. InvalidArgument naming the problem for anything
// else (a null value is skipped: a target never reached).
absl::StatusOr<std::map<std::string, std::map<RegressMetric, double>>>
ParseRegressBaselineFile(absl::string_view json_text);

// Parsers of the flag values; InvalidArgument naming the problem.
// "--baseline": "last-good", a run id, or else a file name.
absl::Status ParseRegressBaseline(absl::string_view text,
                                  RegressOptions& options);
// "--min-history": an integer >= 2.
absl::StatusOr<int> ParseRegressMinHistory(absl::string_view text);
// "--window": an integer >= 1.
absl::StatusOr<int> ParseRegressWindow(absl::string_view text);
// A percentage (--tolerance, --max-cv): a finite number >= 0; the error
// names `flag`.
absl::StatusOr<double> ParseRegressPercent(absl::string_view flag,
                                           absl::string_view text);
// "--reference METRIC=VALUE" into options.references (each metric once).
absl::Status AddRegressReference(absl::string_view text,
                                 RegressOptions& options);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_REGRESS_REGRESS_FLAGS_H_
