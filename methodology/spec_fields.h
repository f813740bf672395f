// The fields of a run spec as one table, a row per YAML key: whether a spec
// must give it, how its value is read into v1::RunSpec (with the checks of
// the value alone: its type, a probability, a range) and when and how it is
// written back. ParseRunSpec reads every key through this table and
// RunSpecToYaml writes them in its order (the order users write), so the two
// cannot disagree; the round-trip test builds one spec from every row's
// example and checks that it sets each RunSpec field. A new spec field is its
// proto field, one row here, and its use. The rules between fields (a fast
// path needs device cuda, the levels, the registry's budgets) are
// ValidateRunSpec's (methodology/spec.h).
//
// Thread-safe: the table is immutable once built.
#ifndef HPCAI500_METHODOLOGY_SPEC_FIELDS_H_
#define HPCAI500_METHODOLOGY_SPEC_FIELDS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace YAML {
class Emitter;
class Node;
}  // namespace YAML

namespace hpcai500 {

struct SpecField {
  // The key in YAML and in errors ("field 'time_limit': ..."); the RunSpec
  // field the row fills has this name (time_limit fills time_limit_s).
  std::string key;
  // A spec without the key is refused: "field '<key>': is required".
  bool required = false;
  // Reads the key's value into *spec: OkStatus, or InvalidArgument
  // "field '<key>': <why>" for a value of the wrong type or one no spec may
  // hold.
  std::function<absl::Status(const YAML::Node& value, v1::RunSpec* spec)> read;
  // Writes "<key>: <value>" into the mapping `out` is in, unless the field
  // holds what leaving the key out means (then the text of a spec stored
  // before the field existed stays what it was).
  std::function<void(const v1::RunSpec& spec, YAML::Emitter& out)> write;
  // A value of the key (YAML text) that, with every other row's example,
  // makes a valid spec in which no field is left at its proto default: the
  // spec of the round-trip test (tests/methodology/spec_test.cc).
  std::string example;
};

// Every key a spec may hold, in the order RunSpecToYaml writes them.
const std::vector<SpecField>& SpecFields();

// The RunSpec fields no row reads: ParseRunSpec computes them.
inline constexpr std::array<std::string_view, 1> kComputedSpecFields = {
    "ranked"};

// How the spec's errors name a field: "field '<key>'".
std::string SpecFieldName(absl::string_view key);

// InvalidArgument "field '<key>': <why>".
absl::Status SpecFieldError(absl::string_view key, absl::string_view why);

// A range check shared by every place that checks what a remote side sends
// (run specs here, assignments in the agent): OkStatus, or InvalidArgument
// "<what>: must be between 1 and 64, got 0", `what` naming the field the way
// the caller's messages do ("field 'seed'", "assignment: master_port").
absl::Status CheckInRange(absl::string_view what, int64_t value, int64_t low,
                          int64_t high);

// Whole seconds ("3600", any sign: the caller checks the range) or a
// duration with units ("90m", "1h30m", "45s"), as time_limit takes it;
// InvalidArgument "<what>: must be seconds or a duration like 90m or 1h30m, got
// '...'".
absl::StatusOr<int64_t> DurationSeconds(absl::string_view text,
                                        absl::string_view what);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SPEC_FIELDS_H_
