#include "cli/args/command_table.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/args/command_flags.h"
#include "cli/args/parse_cli_args.h"
#include "cli/args/usage.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

TEST(CommandTable, NamesAreUniqueAndEveryOneButHelpRuns) {
  std::set<std::string> names;
  for (const CliCommand& command : CliCommands()) {
    EXPECT_TRUE(names.insert(command.name).second) << command.name;
    EXPECT_EQ(command.run == nullptr, command.name == kHelpCommand)
        << command.name;
    EXPECT_EQ(FindCliCommand(command.name), &command);
  }
  EXPECT_EQ(FindCliCommand("frobnicate"), nullptr);
}

TEST(CommandTable, EveryCommandIsInTheUsageWithEachFlagItTakes) {
  const std::string usage = UsageText();
  const CliCommand* described = nullptr;  // the row whose synopsis counts
  for (const CliCommand& command : CliCommands()) {
    if (command.name == kHelpCommand) continue;
    if (!command.synopsis.empty()) described = &command;
    ASSERT_NE(described, nullptr) << command.name;
    EXPECT_THAT(described->synopsis, HasSubstr(command.name + " "));
    for (const std::string& flag : command.flags) {
      EXPECT_NE(FindCommandFlag(flag), nullptr)
          << command.name << " --" << flag;
      EXPECT_THAT(described->synopsis,
                  HasSubstr(absl::StrCat("--", CommandFlagName(flag))))
          << command.name;
    }
    const std::string first_line =
        described->synopsis.substr(0, described->synopsis.find('\n'));
    EXPECT_THAT(usage, HasSubstr("\n  " + first_line)) << command.name;
  }
}

TEST(CommandTable, UsageStartsDescriptionsAtOneColumn) {
  const std::string usage = UsageText();
  // Beside a short synopsis, below a long one, after a synopsis of lines.
  EXPECT_THAT(usage, HasSubstr("\n  hold RUN, release RUN   keep a queued run "
                               "from starting, and let it\n"
                               "                          (your own runs;"));
  EXPECT_THAT(usage, HasSubstr("\n  audit [--limit K] [--json]\n"
                               "                          the newest K"));
  EXPECT_THAT(usage, HasSubstr("\n              [--json]    submissions ranked"
                               " by Valid FLOPS; a page\n"));
  EXPECT_TRUE(absl::StrContains(usage, "\ncommands:\n  submit SPEC [--wait]"));
}

TEST(CommandTable, RunArgumentsAreRunIdsAndWordsMustMatch) {
  auto parsed = ParseCliArgs({"baseline", "promote", "12"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->run_id, 12);
  parsed = ParseCliArgs({"show", "7"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->run_id, 7);
  EXPECT_THAT(ParseCliArgs({"baseline", "demote", "12"}, std::nullopt)
                  .status()
                  .message(),
              HasSubstr("'baseline' knows only 'promote', got 'demote'"));
  EXPECT_THAT(
      ParseCliArgs({"drain", "node-a"}, std::nullopt).status().message(),
      HasSubstr("--reason"));
}

TEST(CommandTable, MaintenanceTakesAnOptionalWordAndForOnlyWithStart) {
  auto parsed = ParseCliArgs({"maintenance"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->positional.empty());
  parsed = ParseCliArgs({"maintenance", "start", "--for", "30m"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();  // --reason is optional here
  EXPECT_EQ(parsed->maintenance_ms, 30 * 60 * 1000);
  parsed = ParseCliArgs({"maintenance", "end"}, std::nullopt);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->maintenance_ms, 0);
  EXPECT_THAT(
      ParseCliArgs({"maintenance", "stop"}, std::nullopt).status().message(),
      HasSubstr("knows only 'start' or 'end', got 'stop'"));
  EXPECT_THAT(
      ParseCliArgs({"maintenance", "start"}, std::nullopt).status().message(),
      HasSubstr("--for"));
  EXPECT_THAT(ParseCliArgs({"maintenance", "end", "--for", "5m"}, std::nullopt)
                  .status()
                  .message(),
              HasSubstr("only with 'maintenance start'"));
  EXPECT_FALSE(
      ParseCliArgs({"maintenance", "start", "--for", "0s"}, std::nullopt).ok());
  EXPECT_FALSE(
      ParseCliArgs({"maintenance", "start", "end"}, std::nullopt).ok());
}

}  // namespace
}  // namespace hpcai500
