// YAML that users send (specs, suites), loaded with yaml-cpp behind a guard:
// yaml-cpp 0.7 (Debian 12's) never returns on some malformed input, such as
// "{}," or a line holding only ",", and allocates a node per turn of its
// loop until memory runs out (jbeder/yaml-cpp#1040, fixed upstream in 0.8
// by #1318 and #1319). One coordinator thread would spin and then the
// process would be killed. So the text is first parsed into events that are
// only counted, with a bound no valid document comes near, and loaded only
// once that pass ends.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_YAML_TEXT_H_
#define HPCAI500_COMMON_YAML_TEXT_H_

#include <yaml-cpp/yaml.h>

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpcai500 {

// Every document of `text`, in order (none for empty text). InvalidArgument
// "<what> is not valid YAML: line L, column C: <reason>" when yaml-cpp
// refuses it or would not finish with it.
absl::StatusOr<std::vector<YAML::Node>> LoadYamlDocuments(
    std::string_view text, absl::string_view what);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_YAML_TEXT_H_
