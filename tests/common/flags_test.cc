#include "common/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

// A command line with one flag of each kind.
struct Example {
  Example() : app(NewFlagApp("example")) {
    AddValueFlag(*app, "db", &db);
    AddRepeatedFlag(*app, "data", &data);
    AddSwitch(*app, "help,h", &help);
    AddTokenFlags(*app, &token);
  }
  absl::Status Parse(const std::vector<std::string>& args) {
    return ParseFlags(*app, args);
  }

  std::unique_ptr<CLI::App> app;
  std::string db;
  std::vector<std::string> data;
  bool help = false;
  TokenFlags token;
};

TEST(ParseFlags, TakesBothSpellingsOfAValue) {
  Example example;
  ASSERT_TRUE(example
                  .Parse({"--db", "a.db", "--data=x=1", "--data", "y=2", "-h",
                          "--token-file", "t"})
                  .ok());
  EXPECT_EQ(example.db, "a.db");
  EXPECT_EQ(example.data, (std::vector<std::string>{"x=1", "y=2"}));
  EXPECT_TRUE(example.help);
  EXPECT_EQ(example.token.token_file, "t");
}

TEST(ParseFlags, RefusalsNameTheFlagAndTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
    std::string problem;
  };
  for (const Case& c : std::vector<Case>{
           {{"--db", "a", "--db", "b"}, "'--db'", "given twice"},
           {{"--help", "--help"}, "'--help'", "given twice"},
           {{"--db"}, "--db", "missing"},
           {{"--db="}, "--db", "missing"},
           {{"--data", "x", "--data="}, "--data", "missing"},
           {{"--bogus", "1"}, "'--bogus'", "unknown argument"},
           {{"--data", "x", "y"}, "'y'", "unknown argument"},
           {{"--help=yes"}, "help", "flag override"},
           {{"--token", "t", "--token-file", "f"}, "--token", "excludes"}}) {
    Example example;
    absl::Status status = example.Parse(c.args);
    ASSERT_FALSE(status.ok()) << c.flag;
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.flag), std::string::npos) << status;
    EXPECT_NE(status.message().find(c.problem), std::string::npos) << status;
  }
}

TEST(ParseFlags, KeepsExtrasForCallersThatWordThemThemselves) {
  std::unique_ptr<CLI::App> app = NewFlagApp("x", /*allow_extras=*/true);
  ASSERT_TRUE(ParseFlags(*app, {"--bogus", "word"}).ok());
  EXPECT_EQ(app->remaining(), (std::vector<std::string>{"--bogus", "word"}));
}

}  // namespace
}  // namespace hpcai500
