// Text formatting shared by the CLI's commands: human units, run states,
// times, aligned tables and --json.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_TEXT_FORMAT_H_
#define HPCAI500_CLI_TEXT_FORMAT_H_

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

// Bytes in binary units, whole from 10 up: 141 << 30 -> "141GiB",
// 1.5 * 2^40 -> "1.5TiB", 512 -> "512B".
std::string FormatBytes(int64_t bytes);

// A node's devices in short, grouped by model, memory and active NVLink
// links in index order: "2x NVIDIA H200 141GiB (18 NVLinks)" (no
// parenthesis without NVLink); without devices its CPU: "AMD EPYC 9654
// 96-Core Processor (192 cores)"; "-" when the inventory says neither.
std::string FormatDevices(const v1::Inventory& inventory);

// One line of provenance: the devices and driver, the CPU and memory, the
// versions by name, e.g. "2x NVIDIA H200 141GiB, driver 550.54.15; AMD EPYC
// 9654 96-Core Processor (192 cores), 1.5TiB; hpcai500 0.1.0, nccl 2.21.5".
// "-" for an empty inventory.
std::string FormatInventory(const v1::Inventory& inventory);

// Columns separated by two spaces and padded to the widest cell; columns in
// `right_aligned` (by index) are padded on the left. No trailing spaces.
// Every row must have as many cells as `header`. Control characters in a
// cell, newlines and tabs included, are escaped (common/printable.h).
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows,
                        const std::set<size_t>& right_aligned = {});

// Multi-line text under a label (a run's error, which may end in a worker's
// stderr tail): control characters escaped but line breaks kept, and each
// line after the first indented by `indent` spaces, so that none can pass
// for a field or a line of its own.
std::string FormatIndentedText(absl::string_view text, size_t indent);

// `message` as indented JSON with proto field names (common/json.h), ending
// in a newline; the error of ProtoToJson when it cannot be encoded.
absl::StatusOr<std::string> FormatJson(
    const google::protobuf::Message& message);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_FORMAT_H_
