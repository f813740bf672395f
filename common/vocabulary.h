// The names every process agrees on for a run's device, precision, gradient
// compression, collective backend, launcher and level: one enum each, its
// spellings on the wire (specs, assignments, worker flags) and the full list
// for error messages, joined by the one list joiner (JoinInProse), and which
// precisions are mixed (the reference recipe's batch rule over them is the
// registry's, methodology/registry.h). Standard library only: the worker links
// it without abseil or protobuf.
//
// Thread-safe: constants and pure functions.
#ifndef HPCAI500_COMMON_VOCABULARY_H_
#define HPCAI500_COMMON_VOCABULARY_H_

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace hpcai500 {

enum class Device { kCpu, kCuda };
enum class Precision { kFp32, kBf16, kFp16 };
enum class Compression { kNone, kFp16, kBf16, kPowerSgd };
// The c10d backend of the ranks' collectives (torchrun's --dist-backend):
// Gloo carries CPU and CUDA tensors, NCCL CUDA tensors only.
enum class DistBackend { kGloo, kNccl };
// Who starts a run's ranks (RunSpec.launcher). kAgent: each agent forks its
// own; kMpirun: rank 0's agent starts one OpenMPI mpirun; kSrun: one Slurm
// job step. docs/design.md "Launchers".
enum class Launcher { kAgent, kMpirun, kSrun };
// The levels of the methodology (docs/design.md "Valid FLOPS, levels and the
// FLOP convention"): what a run may change of the reference recipe. A spec's
// level and the leaderboard's level filter are checked against these names.
enum class Level { kHardware, kSystem, kFree };
// How a scaling sweep (`hpcai500 sweep --scaling`, RunSpec.scaling) sizes the
// batch as the device count grows: kStrong keeps the global batch and
// divides it over the ranks, kWeak keeps the per-rank batch.
enum class Scaling { kStrong, kWeak };

// kNames[i] spells the enum value i. Specialised for each enum above only.
template <typename Enum>
struct Vocabulary;

template <>
struct Vocabulary<Device> {
  static constexpr std::array<std::string_view, 2> kNames = {"cpu", "cuda"};
};
template <>
struct Vocabulary<Precision> {
  static constexpr std::array<std::string_view, 3> kNames = {"fp32", "bf16",
                                                             "fp16"};
};
template <>
struct Vocabulary<Compression> {
  static constexpr std::array<std::string_view, 4> kNames = {
      "none", "fp16", "bf16", "powersgd"};
};
template <>
struct Vocabulary<DistBackend> {
  static constexpr std::array<std::string_view, 2> kNames = {"gloo", "nccl"};
};
template <>
struct Vocabulary<Launcher> {
  static constexpr std::array<std::string_view, 3> kNames = {"agent", "mpirun",
                                                             "srun"};
};
template <>
struct Vocabulary<Level> {
  static constexpr std::array<std::string_view, 3> kNames = {"hardware",
                                                             "system", "free"};
};
template <>
struct Vocabulary<Scaling> {
  static constexpr std::array<std::string_view, 2> kNames = {"strong", "weak"};
};

// Every spelling of Enum, in declaration order ("fp32", "bf16", "fp16").
template <typename Enum>
constexpr const auto& AllNames() {
  return Vocabulary<Enum>::kNames;
}

// The spelling of `value` ("bf16"); never empty.
template <typename Enum>
constexpr std::string_view Name(Enum value) {
  return Vocabulary<Enum>::kNames[static_cast<size_t>(value)];
}

// The value spelled `name` exactly (case-sensitive); nullopt for any other
// text.
template <typename Enum>
constexpr std::optional<Enum> Parse(std::string_view name) {
  const auto& names = Vocabulary<Enum>::kNames;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

// The spellings joined by `separator`: "fp32|bf16|fp16" for "|".
template <typename Enum>
std::string JoinNames(std::string_view separator) {
  std::string text;
  for (std::string_view name : Vocabulary<Enum>::kNames) {
    if (!text.empty()) text += separator;
    text += name;
  }
  return text;
}

// `names` (any range of strings or string_views) joined for a message:
// "a, b or c"; "a" alone; "" for none. The one list joiner: enum names
// (NamesInProse) and the worker's model names both use it.
template <typename Names>
std::string JoinInProse(const Names& names) {
  const size_t count = std::size(names);
  std::string text;
  size_t i = 0;
  for (const auto& name : names) {
    if (i > 0) text += i + 1 == count ? " or " : ", ";
    text += name;
    ++i;
  }
  return text;
}

// The spellings joined for a message: "fp32, bf16 or fp16".
template <typename Enum>
std::string NamesInProse() {
  return JoinInProse(Vocabulary<Enum>::kNames);
}

// True for bf16 and fp16: the precisions the reference recipe calls mixed.
bool IsMixedPrecision(Precision precision);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_VOCABULARY_H_
