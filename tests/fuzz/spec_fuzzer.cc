// ParseRunSpec (common/spec.h) on any text, with the built-in registry: it
// refuses with InvalidArgument or returns a spec that ValidateRunSpec
// accepts and that RunSpecToYaml writes as YAML parsing back to the same
// spec.
#include <string>

#include "absl/status/status.h"
#include "common/spec.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hpcai500::FuzzCheck;
  const hpcai500::Registry& registry = hpcai500::Registry::Builtin();
  absl::StatusOr<hpcai500::v1::RunSpec> spec =
      hpcai500::ParseRunSpec(hpcai500::FuzzText(data, size), registry);
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
