// What `hpcai500 changes` prints (and `regress` quotes): the change points
// of run series as a table, newest first, and one change in a line.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_TEXT_CHANGES_TEXT_H_
#define HPCAI500_CLI_TEXT_CHANGES_TEXT_H_

#include <string>

#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// "throughput -8.1% [-9.0%, -7.2%] at run 41 (regression, step): <attribution>"
std::string FormatChangeLine(const v1::ChangePoint& change);

// A table of `changes` (name, metric, first run after, when it finished in
// `zone`, the change with its interval, regression or improvement, step or
// drift, what changed), or "no change points\n" for none.
std::string FormatChanges(const v1::ListChangesResponse& changes,
                          absl::TimeZone zone);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_CHANGES_TEXT_H_
