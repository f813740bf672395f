// The usage text, laid out from the command table (cli/args/usage.h).
#include "cli/args/usage.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/args/cli_args.h"
#include "common/token.h"

namespace hpcai500 {
namespace {

// The column of the usage text at which descriptions begin.
constexpr size_t kDescriptionColumn = 26;

constexpr char kGlobalFlags[] =
    "usage: hpcai500 [--coordinator HOST:PORT]\n"
    "                [--token-file FILE | --token TOKEN] [--tls-ca FILE]\n"
    "       hpcai500 --version\n";

// A command's lines of the usage: "  SYNOPSIS", and its description from
// kDescriptionColumn, starting on the synopsis's last line where that
// leaves two spaces free, else below it.
std::string UsageLines(const CliCommand& command) {
  if (command.synopsis.empty()) return "";
  const std::vector<std::string> synopsis =
      absl::StrSplit(command.synopsis, '\n');
  const std::vector<std::string> description =
      absl::StrSplit(command.description, '\n');
  std::string text;
  for (size_t i = 0; i + 1 < synopsis.size(); ++i) {
    absl::StrAppend(&text, "  ", synopsis[i], "\n");
  }
  std::string last = absl::StrCat("  ", synopsis.back());
  auto line = description.begin();
  if (last.size() + 2 <= kDescriptionColumn) {
    last.resize(kDescriptionColumn, ' ');
    absl::StrAppend(&text, last, *line++, "\n");
  } else {
    absl::StrAppend(&text, last, "\n");
  }
  for (; line != description.end(); ++line) {
    absl::StrAppend(&text, std::string(kDescriptionColumn, ' '), *line, "\n");
  }
  return text;
}

// Every command's UsageLines, in the table's order.
std::string CommandLines() {
  std::string text;
  for (const CliCommand& command : CliCommands()) {
    absl::StrAppend(&text, UsageLines(command));
  }
  return text;
}

}  // namespace

std::string CommandUsageText(const CliCommand& command) {
  const std::vector<CliCommand>& commands = CliCommands();
  // A row without lines (release) is described by the row before (hold).
  const CliCommand* described = &command;
  while (described->synopsis.empty() && described != &commands.front()) {
    --described;
  }
  return absl::StrCat(kGlobalFlags, "                ", command.name,
                      " ...\n\n", UsageLines(*described),
                      "\n(hpcai500 --help: every command and the exit "
                      "codes)\n");
}

std::string UsageText() {
  return absl::StrCat(
      kGlobalFlags,
      "                COMMAND [ARGS]\n"
      "\n"
      "commands:\n",
      CommandLines(),
      "\n"
      "The coordinator is --coordinator, else $",
      kCoordinatorEnvVar, ", else ", kDefaultCoordinator,
      ".\n"
      "--token-file sends the file's token as 'authorization: Bearer ...';\n"
      "--token gives it inline; without either, $",
      kTokenEnvVar,
      " if set.\n"
      "--tls-ca connects over TLS, trusting only that CA (PEM) for the\n"
      "coordinator's certificate (for hpcai500d --tls-cert).\n"
      "\n"
      "exit codes (submit --wait, sweep --wait, watch): 0 reached the target\n"
      "quality, 1 finished below it, 2 failed, cancelled or aborted (or any\n"
      "error), 3 spec refused; 64 bad command line, 66 unreadable file, 75 no\n"
      "answer from the coordinator after every retry (submit again with\n"
      "--request-id).\n"
      "exit codes (check): 0 healthy, 2 unhealthy (the node is unknown, down,\n"
      "drained or draining, or the noop run failed or did not end in time;\n"
      "the output says which) or any error (such as an unreachable\n"
      "coordinator); 64 bad command line, 66 unreadable file.\n"
      "exit codes (regress): 0 no regression (or no baseline yet), 1 a metric\n"
      "regressed, 2 the run failed or was cancelled (or any error), 3 spec\n"
      "refused; 64 bad command line, 66 unreadable file.\n");
}

}  // namespace hpcai500
