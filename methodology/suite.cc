#include "methodology/suite.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/yaml_text.h"

namespace hpcai500 {
namespace {

// The keys of a form (a) suite mapping.
constexpr char kSuiteKey[] = "suite";
constexpr char kSpecsKey[] = "specs";
// A form (b) suite whose first spec has no usable name.
constexpr char kDefaultSuiteName[] = "suite";
// The longest suite name shown in an error.
constexpr size_t kQuotedNameBytes = 80;

absl::Status SuiteError(absl::string_view where, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("suite: ", where, ": ", why));
}

bool IsSuiteMapping(const YAML::Node& node) {
  return node.IsMap() && (node[kSuiteKey] || node[kSpecsKey]);
}

// One spec mapping as YAML text; `where` names it in errors.
absl::StatusOr<std::string> SpecText(const YAML::Node& node,
                                     absl::string_view where) {
  if (!node.IsDefined() || node.IsNull()) return SuiteError(where, "is empty");
  if (!node.IsMap()) {
    return SuiteError(where, "must be a mapping of spec fields");
  }
  if (node.size() == 0) return SuiteError(where, "is empty");
  YAML::Emitter out;
  out << node;
  if (!out.good()) {
    return SuiteError(where, absl::StrCat("cannot be written back as YAML: ",
                                          out.GetLastError()));
  }
  return absl::StrCat(out.c_str(), "\n");
}

absl::Status CheckSpecCount(size_t count) {
  if (count == 0) {
    return absl::InvalidArgumentError("suite: holds no spec");
  }
  if (count > static_cast<size_t>(kMaxSuiteSpecs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "suite: ", count, " specs; a suite holds at most ", kMaxSuiteSpecs));
  }
  return absl::OkStatus();
}

// Form (a): `suite: NAME` and `specs:` a list of spec mappings.
absl::StatusOr<Suite> ReadSuiteMapping(const YAML::Node& root) {
  for (const auto& entry : root) {
    const std::string key =
        entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    if (key != kSuiteKey && key != kSpecsKey) {
      return SuiteError(
          "top level",
          absl::StrCat("unknown key '", key.substr(0, kQuotedNameBytes),
                       "' (a suite mapping has 'suite' and 'specs')"));
    }
  }
  const YAML::Node name = root[kSuiteKey];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return SuiteError("'suite'", "must be the suite's name");
  }
  const YAML::Node specs = root[kSpecsKey];
  if (!specs || !specs.IsSequence()) {
    return SuiteError("'specs'", "must be a list of spec mappings");
  }
  RETURN_IF_ERROR(CheckSpecCount(specs.size()));
  Suite suite;
  suite.name = name.Scalar();
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSIGN_OR_RETURN(
        std::string text,
        SpecText(specs[i], absl::StrCat("item ", i + 1, " of 'specs'")));
    suite.specs.push_back(std::move(text));
  }
  return suite;
}

// Form (b), and a single spec: each document one spec mapping.
absl::StatusOr<Suite> ReadSpecDocuments(const std::vector<YAML::Node>& docs) {
  RETURN_IF_ERROR(CheckSpecCount(docs.size()));
  Suite suite;
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string where = absl::StrCat("document ", i + 1);
    if (IsSuiteMapping(docs[i])) {
      return SuiteError(where,
                        "a suite mapping ('suite' and 'specs') must be the "
                        "file's only document");
    }
    ASSIGN_OR_RETURN(std::string text, SpecText(docs[i], where));
    suite.specs.push_back(std::move(text));
  }
  const YAML::Node first_name = docs.front()["name"];
  suite.name =
      first_name && first_name.IsScalar() && !first_name.Scalar().empty()
          ? first_name.Scalar()
          : kDefaultSuiteName;
  return suite;
}

}  // namespace

absl::StatusOr<Suite> ParseSuite(std::string_view yaml) {
  if (yaml.size() > kMaxSuiteBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("suite: ", yaml.size(), " bytes is over the limit of ",
                     kMaxSuiteBytes));
  }
  ASSIGN_OR_RETURN(const std::vector<YAML::Node> docs,
                   LoadYamlDocuments(yaml, "suite"));
  if (docs.size() == 1 && IsSuiteMapping(docs.front())) {
    ASSIGN_OR_RETURN(Suite suite, ReadSuiteMapping(docs.front()));
    suite.listed = true;
    return suite;
  }
  return ReadSpecDocuments(docs);
}

}  // namespace hpcai500
