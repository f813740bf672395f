// Suites: several run specs submitted as one (issue 13, `hpcai500 submit
// suite.yaml`). A suite file is either
//   (a) one mapping:  suite: NAME
//                     specs:
//                       - {name: ..., workload: ..., ...}
//                       - ...
//   (b) a YAML stream of spec documents separated by "---";
// and a file holding one plain spec is a suite of one, so a submit path can
// always read a file as a suite first. Only the suite's shape is checked
// here: each spec is handed on as YAML text for ParseRunSpec (or
// ParseSubmission) to judge, one at a time.
//
// Thread-safe: free functions.
#ifndef HPCAI500_METHODOLOGY_SUITE_H_
#define HPCAI500_METHODOLOGY_SUITE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hpcai500 {

// The most specs one suite may hold, and the longest suite file.
inline constexpr int kMaxSuiteSpecs = 100;
inline constexpr size_t kMaxSuiteBytes = 1 << 20;

struct Suite {
  // Form (a): its `suite:`; form (b): the first spec's name, or "suite"
  // when that has none.
  std::string name;
  // Each spec mapping written back as YAML text (yaml-cpp's emitter), in the
  // file's order; ParseRunSpec reads each as the user wrote it.
  std::vector<std::string> specs;
  // Form (a): the specs came from a `suite:` mapping's `specs:` list, so
  // the submitted text is not itself a spec (even with one item).
  bool listed = false;
};

// Parses a suite file. InvalidArgument that names the document or item
// (1-based) and the reason when the text is over kMaxSuiteBytes, not YAML
// (line and column), holds no spec, or more than kMaxSuiteSpecs, when a
// document or item is empty or not a mapping, when a form (a) mapping has a
// key other than `suite` and `specs`, lacks either, or shares its file with
// other documents.
absl::StatusOr<Suite> ParseSuite(std::string_view yaml);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SUITE_H_
