#include "cli/format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hpcai500 {

std::string FormatFlops(double flops) {
  static constexpr const char* kUnits[] = {
      "FLOPS", "KFLOPS", "MFLOPS", "GFLOPS", "TFLOPS", "PFLOPS", "EFLOPS"};
  constexpr size_t kLastUnit = sizeof(kUnits) / sizeof(kUnits[0]) - 1;
  if (!std::isfinite(flops)) return absl::StrCat(flops, " FLOPS");
  size_t unit = 0;
  while (std::fabs(flops) >= 999.995 && unit < kLastUnit) {
    flops /= 1000;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", flops, kUnits[unit]);
}

std::string FormatTimeMs(int64_t unix_ms, absl::TimeZone zone) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          zone);
}

std::string FormatQualityVsTarget(double quality, double target) {
  return absl::StrFormat("%.4f / %.4f", quality, target);
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::set<size_t>& right_aligned) {
  std::vector<size_t> widths(header.size());
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  widen(header);
  for (const auto& row : rows) widen(row);

  std::string out;
  auto append = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      if (i > 0) line += "  ";
      std::string padding(widths[i] - row[i].size(), ' ');
      if (right_aligned.count(i) > 0) {
        absl::StrAppend(&line, padding, row[i]);
      } else {
        absl::StrAppend(&line, row[i], padding);
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  };
  append(header);
  for (const auto& row : rows) append(row);
  return out;
}

}  // namespace hpcai500
