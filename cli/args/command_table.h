// The one table of `hpcai500` commands: each command's name, the arguments
// and flags it takes, its lines in the usage text, and the handler that
// runs it. ParseCliArgs (cli/args/parse_cli_args.h) reads the arguments and
// flags, UsageText (cli/args/usage.h) the usage, RunCli (cli/cli.h) the
// handler; a new command is one row.
//
// Thread-safe: the table is constant.
#ifndef HPCAI500_CLI_ARGS_COMMAND_TABLE_H_
#define HPCAI500_CLI_ARGS_COMMAND_TABLE_H_

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "cli/args/cli_args.h"
#include "cli/client/command_context.h"

namespace hpcai500 {

// Argument names the parser reads, as a row spells them: RUN is a run id
// (CliArgs::run_id); SPEC a spec file, or - for stdin, that RunCli reads
// before connecting. A lower-case name is a word that must be given as it is
// (baseline promote). An argument in brackets is optional, and words apart
// by '|' are the choices of one (maintenance [start|end]).
inline constexpr char kRunArg[] = "RUN";
inline constexpr char kSpecArg[] = "SPEC";
// The command that prints the usage (as --help does).
inline constexpr char kHelpCommand[] = "help";
inline constexpr char kMaintenanceCommand[] = "maintenance";

// A flag a command lists as "NAME?" is optional for it even where the flag
// is required by the others (maintenance start's --reason, drain's is
// required). The flag's name, and whether it is marked so:
inline absl::string_view CommandFlagName(absl::string_view listed) {
  absl::ConsumeSuffix(&listed, "?");
  return listed;
}
inline bool IsOptionalFlag(absl::string_view listed) {
  return absl::EndsWith(listed, "?");
}

// What a handler is lent while it runs.
struct CommandCall {
  const CliArgs& args;
  const std::string& spec_source;  // "'FILE'" or "from stdin", for messages
  const std::string& spec_yaml;    // the SPEC's text; empty without one
  CommandContext context;          // the coordinator, stdout and stderr
};

struct CliCommand {
  std::string name;
  std::vector<std::string> args;  // its positional arguments, in order
  // The command flags it takes (no dashes; "NAME?": optional here).
  std::vector<std::string> flags;
  // Its lines in UsageText: the synopsis (lines apart by "\n"), then the
  // description, indented to one column; both empty when the row before
  // describes it too (hold RUN, release RUN).
  std::string synopsis;
  std::string description;
  // Runs it and returns the exit code (cli/client/exit_codes.h); null for help.
  int (*run)(const CommandCall& call) = nullptr;
};

// Every command, in the order UsageText lists them.
const std::vector<CliCommand>& CliCommands();

// The row named `name`, or null.
const CliCommand* FindCliCommand(absl::string_view name);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_ARGS_COMMAND_TABLE_H_
