#include "methodology/suite.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/message_differencer.h"
#include "methodology/registry.h"
#include "methodology/spec.h"
#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::SourceFileText;

// The spec as ParseRunSpec reads it; fails the test when it is refused.
v1::RunSpec MustParseSpec(const std::string& yaml) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, Registry::Builtin());
  EXPECT_TRUE(spec.ok()) << spec.status() << "\n" << yaml;
  return spec.ok() ? *spec : v1::RunSpec();
}

// Each line of `text` indented by `spaces` (for a spec inside `specs:`).
std::string Indented(const std::string& text, int spaces) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, std::string(spaces, ' '), line, "\n");
  }
  return out;
}

std::string MessageOf(const std::string& yaml) {
  absl::StatusOr<Suite> suite = ParseSuite(yaml);
  if (suite.ok()) return "accepted";
  EXPECT_EQ(suite.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(suite.status().message());
}

TEST(Suite, PlainSpecIsASuiteOfOneNamedAfterIt) {
  const std::string spec = SourceFileText("examples/fmnist-smoke.yaml");
  absl::StatusOr<Suite> suite = ParseSuite(spec);
  ASSERT_TRUE(suite.ok()) << suite.status();
  EXPECT_EQ(suite->name, "fmnist-smoke");
  ASSERT_EQ(suite->specs.size(), 1u);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      MustParseSpec(suite->specs[0]), MustParseSpec(spec)));
}

TEST(Suite, SpecDocumentsRoundTripThroughParseRunSpecInOrder) {
  const std::string fmnist = SourceFileText("examples/fmnist-smoke.yaml");
  const std::string ewa = SourceFileText("examples/ewa-smoke.yaml");
  const std::string full = SourceFileText("examples/fmnist.yaml");
  absl::StatusOr<Suite> suite =
      ParseSuite(absl::StrCat(fmnist, "---\n", ewa, "---\n", full));
  ASSERT_TRUE(suite.ok()) << suite.status();
  EXPECT_EQ(suite->name, "fmnist-smoke");
  ASSERT_EQ(suite->specs.size(), 3u);
  const std::string originals[] = {fmnist, ewa, full};
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
        MustParseSpec(suite->specs[i]), MustParseSpec(originals[i])))
        << "spec " << i + 1 << ":\n"
        << suite->specs[i];
  }
}

TEST(Suite, SuiteMappingRoundTripsEachItem) {
  const std::string fmnist = SourceFileText("examples/fmnist-smoke.yaml");
  const std::string ewa = SourceFileText("examples/ewa-smoke.yaml");
  const std::string yaml =
      absl::StrCat("suite: smoke\nspecs:\n  -\n", Indented(fmnist, 4),
                   "  - {name: quoted, workload: image_classification, config: "
                   "fashion_mnist_smoke, level: system, nodes: 1, "
                   "ranks_per_node: 1, device: cpu, batch_size: 32, precision: "
                   "fp32, seed: \"7\", system: 'local cpu', time_limit: 90m}\n",
                   "  -\n", Indented(ewa, 4));
  absl::StatusOr<Suite> suite = ParseSuite(yaml);
  ASSERT_TRUE(suite.ok()) << suite.status() << "\n" << yaml;
  EXPECT_EQ(suite->name, "smoke");
  ASSERT_EQ(suite->specs.size(), 3u);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      MustParseSpec(suite->specs[0]), MustParseSpec(fmnist)));
  const v1::RunSpec quoted = MustParseSpec(suite->specs[1]);
  EXPECT_EQ(quoted.name(), "quoted");
  EXPECT_EQ(quoted.seed(), 7);
  EXPECT_EQ(quoted.system(), "local cpu");
  EXPECT_EQ(quoted.time_limit_s(), 90 * 60);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      MustParseSpec(suite->specs[2]), MustParseSpec(ewa)));
}

TEST(Suite, NightlySmokeSuiteHoldsAnIcAndAnEwaSmokeSpec) {
  absl::StatusOr<Suite> suite =
      ParseSuite(SourceFileText("suites/nightly-smoke.yaml"));
  ASSERT_TRUE(suite.ok()) << suite.status();
  EXPECT_EQ(suite->name, "nightly-smoke");
  ASSERT_EQ(suite->specs.size(), 2u);
  const v1::RunSpec ic = MustParseSpec(suite->specs[0]);
  const v1::RunSpec ewa = MustParseSpec(suite->specs[1]);
  EXPECT_EQ(ic.workload(), "image_classification");
  EXPECT_EQ(ic.config(), "fashion_mnist_smoke");
  EXPECT_EQ(ewa.workload(), "extreme_weather");
  EXPECT_EQ(ewa.config(), "ewa_smoke");
  // Small enough for a 2-core CI box: CPU only, two ranks at most.
  for (const v1::RunSpec& spec : {ic, ewa}) {
    EXPECT_EQ(spec.device(), "cpu") << spec.name();
    EXPECT_LE(spec.nodes() * spec.ranks_per_node(), 2) << spec.name();
    EXPECT_GT(spec.time_limit_s(), 0) << spec.name();
  }
}

TEST(Suite, SuiteWithoutNamesIsCalledSuite) {
  absl::StatusOr<Suite> suite = ParseSuite("workload: x\n---\nworkload: y\n");
  ASSERT_TRUE(suite.ok()) << suite.status();
  EXPECT_EQ(suite->name, "suite");
  EXPECT_EQ(suite->specs.size(), 2u);
}

TEST(Suite, RefusesWhatIsNotASuiteNamingWhere) {
  EXPECT_EQ(MessageOf(""), "suite: holds no spec");
  EXPECT_EQ(MessageOf("name: a\n---\n---\nname: c\n"),
            "suite: document 2: is empty");
  EXPECT_EQ(MessageOf("name: a\n---\n- 1\n- 2\n"),
            "suite: document 2: must be a mapping of spec fields");
  EXPECT_EQ(MessageOf("just text\n"),
            "suite: document 1: must be a mapping of spec fields");
  EXPECT_EQ(MessageOf("{}\n"), "suite: document 1: is empty");
  EXPECT_EQ(MessageOf("suite: s\nspecs:\n  - {name: a}\n  - 3\n"),
            "suite: item 2 of 'specs': must be a mapping of spec fields");
  EXPECT_EQ(MessageOf("suite: s\nspecs:\n  - {name: a}\n  -\n"),
            "suite: item 2 of 'specs': is empty");
  EXPECT_EQ(MessageOf("suite: s\nspecs: []\n"), "suite: holds no spec");
  EXPECT_EQ(MessageOf("suite: s\nspecs: {name: a}\n"),
            "suite: 'specs': must be a list of spec mappings");
  EXPECT_EQ(MessageOf("specs:\n  - {name: a}\n"),
            "suite: 'suite': must be the suite's name");
  EXPECT_EQ(MessageOf("suite: s\nseed: 1\nspecs:\n  - {name: a}\n"),
            "suite: top level: unknown key 'seed' (a suite mapping has "
            "'suite' and 'specs')");
  EXPECT_EQ(MessageOf("name: a\n---\nsuite: s\nspecs:\n  - {name: b}\n"),
            "suite: document 2: a suite mapping ('suite' and 'specs') must be "
            "the file's only document");
  EXPECT_EQ(MessageOf("name: [a\n"),
            "suite is not valid YAML: line 2, column 1: end of sequence flow "
            "not found");
  // yaml-cpp 0.7 would loop without end on these (common/yaml_text.h).
  EXPECT_EQ(MessageOf("name: a\n---\n{},\n")
                .rfind("suite is not valid YAML: line 3, column ", 0),
            0u);
}

TEST(Suite, RefusesMoreThanTheLimitOfSpecs) {
  std::string stream;
  for (int i = 0; i <= kMaxSuiteSpecs; ++i) {
    absl::StrAppend(&stream, i > 0 ? "---\n" : "", "name: s", i, "\n");
  }
  EXPECT_EQ(MessageOf(stream),
            absl::StrCat("suite: ", kMaxSuiteSpecs + 1,
                         " specs; a suite holds at most ", kMaxSuiteSpecs));
  std::string list = "suite: big\nspecs:\n";
  for (int i = 0; i <= kMaxSuiteSpecs; ++i) {
    absl::StrAppend(&list, "  - {name: s", i, "}\n");
  }
  EXPECT_EQ(MessageOf(list),
            absl::StrCat("suite: ", kMaxSuiteSpecs + 1,
                         " specs; a suite holds at most ", kMaxSuiteSpecs));
}

TEST(Suite, RefusesATooLongFile) {
  const std::string huge(kMaxSuiteBytes + 1, '#');
  EXPECT_EQ(MessageOf(huge),
            absl::StrCat("suite: ", kMaxSuiteBytes + 1,
                         " bytes is over the limit of ", kMaxSuiteBytes));
}

}  // namespace
}  // namespace hpcai500
