#include "common/yaml_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

std::string MessageOf(const std::string& text) {
  absl::StatusOr<std::vector<YAML::Node>> docs =
      LoadYamlDocuments(text, "spec");
  if (docs.ok()) return "loaded";
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(docs.status().message());
}

TEST(LoadYamlDocuments, LoadsEveryDocumentInOrder) {
  absl::StatusOr<std::vector<YAML::Node>> docs =
      LoadYamlDocuments("a: 1\n---\n[x, {y: z}]\n---\n", "suite");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 3u);
  EXPECT_EQ((*docs)[0]["a"].as<int>(), 1);
  EXPECT_EQ((*docs)[1][1]["y"].as<std::string>(), "z");
  EXPECT_TRUE((*docs)[2].IsNull()) << "a '---' at the end opens an empty one";
  EXPECT_TRUE(LoadYamlDocuments("", "spec")->empty());
  // Real files, with comments and many fields, are far below the bound.
  EXPECT_EQ(MessageOf(testing::SourceFileText("suites/nightly-smoke.yaml")),
            "loaded");
  EXPECT_EQ(MessageOf("{a, b, c, d: [[[]]], e: {}, f: [~, ~]}\n"), "loaded");
  EXPECT_EQ(MessageOf("-\n-\n-\n---\n---\n"), "loaded");
}

TEST(LoadYamlDocuments, NamesWhereTheYamlIsBroken) {
  EXPECT_EQ(MessageOf("a: [1\n"),
            "spec is not valid YAML: line 2, column 1: end of sequence flow "
            "not found");
}

// yaml-cpp 0.7 never returns on these and allocates until the process is
// killed; the guard refuses them at once.
TEST(LoadYamlDocuments, RefusesWhatTheParserWouldLoopOn) {
  for (const std::string text :
       {"{},", "[1],", ",", "- a\n- b\n,\n", "name: a\n---\n{},\n"}) {
    const std::string message = MessageOf(text);
    EXPECT_EQ(message.rfind("spec is not valid YAML: line ", 0), 0u)
        << text << ": " << message;
  }
  EXPECT_EQ(MessageOf("{},"),
            "spec is not valid YAML: line 1, column 3: the parser does not "
            "get past this point (a stray ','?)");
}

}  // namespace
}  // namespace hpcai500
