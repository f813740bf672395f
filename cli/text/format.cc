// The CLI's shared formatting: units, times, tables and JSON
// (cli/text/format.h).
#include "cli/text/format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "common/printable.h"

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

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B",   "KiB", "MiB", "GiB",
                                           "TiB", "PiB", "EiB"};
  constexpr size_t kLastUnit = sizeof(kUnits) / sizeof(kUnits[0]) - 1;
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (std::fabs(value) >= 1023.5 && unit < kLastUnit) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0 || std::fabs(value) >= 9.95) {
    return absl::StrFormat("%.0f%s", value, kUnits[unit]);
  }
  std::string text = absl::StrFormat("%.1f", value);
  if (absl::EndsWith(text, ".0")) text.resize(text.size() - 2);
  return absl::StrCat(text, kUnits[unit]);
}

std::string FormatDevices(const v1::Inventory& inventory) {
  if (inventory.devices_size() == 0) {
    if (inventory.cpu_model().empty() && inventory.cpu_cores() <= 0) {
      return "-";
    }
    const std::string cores = absl::StrCat(inventory.cpu_cores(), " cores");
    if (inventory.cpu_model().empty()) return cores;
    if (inventory.cpu_cores() <= 0) return inventory.cpu_model();
    return absl::StrCat(inventory.cpu_model(), " (", cores, ")");
  }
  // Groups of equal devices, in the order their first member comes.
  std::vector<std::pair<std::string, int>> groups;
  for (const v1::Device& device : inventory.devices()) {
    std::string name = device.model().empty() ? device.kind() : device.model();
    if (name.empty()) name = "device";
    if (device.memory_bytes() > 0) {
      absl::StrAppend(&name, " ", FormatBytes(device.memory_bytes()));
    }
    if (device.nvlink_links() > 0) {
      absl::StrAppend(&name, " (", device.nvlink_links(),
                      device.nvlink_links() == 1 ? " NVLink)" : " NVLinks)");
    }
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == name; });
    if (same == groups.end()) {
      groups.emplace_back(std::move(name), 1);
    } else {
      ++same->second;
    }
  }
  return absl::StrJoin(groups, ", ", [](std::string* out, const auto& g) {
    absl::StrAppend(out, g.second, "x ", g.first);
  });
}

std::string FormatInventory(const v1::Inventory& inventory) {
  std::vector<std::string> parts;
  if (inventory.devices_size() > 0) {
    std::string gpus = FormatDevices(inventory);
    if (!inventory.driver_version().empty()) {
      absl::StrAppend(&gpus, ", driver ", inventory.driver_version());
    }
    parts.push_back(std::move(gpus));
  }
  v1::Inventory cpu_only = inventory;
  cpu_only.clear_devices();
  std::string host = FormatDevices(cpu_only);
  if (inventory.memory_bytes() > 0) {
    host = host == "-" ? FormatBytes(inventory.memory_bytes())
                       : absl::StrCat(host, ", ",
                                      FormatBytes(inventory.memory_bytes()));
  }
  if (host != "-") parts.push_back(std::move(host));
  // Sorted so the line is stable (the map is unordered).
  std::map<std::string, std::string> versions(inventory.versions().begin(),
                                              inventory.versions().end());
  if (!versions.empty()) {
    parts.push_back(absl::StrJoin(versions, ", ", absl::PairFormatter(" ")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, "; ");
}

std::string FormatTimeMs(int64_t unix_ms, absl::TimeZone zone) {
  if (unix_ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(unix_ms),
                          zone);
}

std::string FormatQualityVsTarget(double quality, double target) {
  return absl::StrFormat("%.4f / %.4f", quality, target);
}

std::string FormatIndentedText(absl::string_view text, size_t indent) {
  const std::string kept = EscapeControlCharacters(
      std::string_view(text.data(), text.size()), /*keep_line_breaks=*/true);
  return absl::StrReplaceAll(
      absl::StripTrailingAsciiWhitespace(kept),
      {{"\n", absl::StrCat("\n", std::string(indent, ' '))}});
}

std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& cells,
                        const std::set<size_t>& right_aligned) {
  // A cell is one line: a newline in a stored text (a drain reason, an
  // audit detail) would forge a row.
  std::vector<std::vector<std::string>> rows;
  rows.reserve(cells.size());
  for (const std::vector<std::string>& row : cells) {
    std::vector<std::string>& escaped = rows.emplace_back();
    for (const std::string& cell : row) escaped.push_back(EscapeLine(cell));
  }
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

absl::StatusOr<std::string> FormatJson(
    const google::protobuf::Message& message) {
  absl::StatusOr<std::string> json = ProtoToJson(message, /*indent=*/true);
  if (json.ok() && (json->empty() || json->back() != '\n')) {
    json->push_back('\n');
  }
  return json;
}

}  // namespace hpcai500
