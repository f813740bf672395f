// ParseRunSpec (methodology/spec.h) on any text, with the built-in registry: it
// refuses with InvalidArgument or returns a spec that ValidateRunSpec
// accepts and that RunSpecToYaml writes as YAML parsing back to the same
// spec. ParseSuite (methodology/suite.h) on the same text: it refuses with
// InvalidArgument or returns 1 to kMaxSuiteSpecs spec texts that
// ParseRunSpec judges like any text; a one-spec suite of a text
// ParseRunSpec accepts is that same spec.
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/util/message_differencer.h"
#include "methodology/spec.h"
#include "methodology/suite.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using hpcai500::FuzzCheck;

void CheckSuite(std::string_view text,
                const absl::StatusOr<hpcai500::v1::RunSpec>& spec,
                const hpcai500::Registry& registry) {
  absl::StatusOr<hpcai500::Suite> suite = hpcai500::ParseSuite(text);
  if (!suite.ok()) {
    FuzzCheck(absl::IsInvalidArgument(suite.status()),
              "a refused suite is InvalidArgument", suite.status().ToString());
    return;
  }
  FuzzCheck(
      !suite->specs.empty() &&
          suite->specs.size() <= static_cast<size_t>(hpcai500::kMaxSuiteSpecs),
      "a suite holds 1 to kMaxSuiteSpecs specs");
  for (const std::string& item : suite->specs) {
    absl::StatusOr<hpcai500::v1::RunSpec> parsed =
        hpcai500::ParseRunSpec(item, registry);
    FuzzCheck(parsed.ok() || absl::IsInvalidArgument(parsed.status()),
              "a suite's spec is judged by ParseRunSpec", item);
    if (spec.ok() && suite->specs.size() == 1) {
      FuzzCheck(
          parsed.ok() && google::protobuf::util::MessageDifferencer::Equals(
                             *spec, *parsed),
          "a suite of one spec is that spec", item);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const hpcai500::Registry& registry = hpcai500::Registry::Builtin();
  const std::string_view text = hpcai500::FuzzText(data, size);
  absl::StatusOr<hpcai500::v1::RunSpec> spec =
      hpcai500::ParseRunSpec(text, registry);
  CheckSuite(text, spec, registry);
  if (!spec.ok()) {
    FuzzCheck(absl::IsInvalidArgument(spec.status()),
              "a refused spec is InvalidArgument", spec.status().ToString());
    return 0;
  }
  absl::Status valid = hpcai500::ValidateRunSpec(*spec, registry);
  FuzzCheck(valid.ok(), "a parsed spec validates", valid.ToString());
  const std::string yaml = hpcai500::RunSpecToYaml(*spec);
  absl::StatusOr<hpcai500::v1::RunSpec> again =
      hpcai500::ParseRunSpec(yaml, registry);
  FuzzCheck(again.ok(), "RunSpecToYaml's YAML parses",
            again.ok() ? yaml : again.status().ToString() + "\n" + yaml);
  FuzzCheck(google::protobuf::util::MessageDifferencer::Equals(*spec, *again),
            "RunSpecToYaml's YAML parses to the same spec", yaml);
  return 0;
}
