// Text formatting shared by the CLI's commands: human units, run states,
// times and aligned tables.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_FORMAT_H_
#define HPCAI500_CLI_FORMAT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// FLOP rates in decimal units with two decimals: 1.234e12 -> "1.23 TFLOPS".
std::string FormatFlops(double flops);

// "2024-05-01 12:00:03" in `zone`, or "-" for 0 (never set).
std::string FormatTimeMs(int64_t unix_ms, absl::TimeZone zone);

// "0.9123 / 0.9000".
std::string FormatQualityVsTarget(double quality, double target);

// Columns separated by two spaces and padded to the widest cell; columns in
// `right_aligned` (by index) are padded on the left. No trailing spaces.
// Every row must have as many cells as `header`.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::set<size_t>& right_aligned = {});

}  // namespace hpcai500

#endif  // HPCAI500_CLI_FORMAT_H_
