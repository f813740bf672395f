// The flags of `hpcai500` bound onto CLI11: the global flags, and one row
// per command flag (its name, and its field of RawCliArgs, whose type says
// its kind: a switch, a value, or a repeatable value). The command table
// (cli/args/command_table.h) says which command takes which flag;
// ParseCliArgs (cli/args/parse_cli_args.h) checks and converts the values.
//
// Thread-safe: the table is constant; an App binds one RawCliArgs and is
// used by one thread.
#ifndef HPCAI500_CLI_ARGS_COMMAND_FLAGS_H_
#define HPCAI500_CLI_ARGS_COMMAND_FLAGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/args/cli_args.h"
#include "cli/args/command_table.h"

namespace hpcai500 {

// The command line as CLI11 binds it: the global flags and the positional
// arguments straight into `args`, each command flag as given until
// ParseCliArgs checks it and moves it into `args`.
struct RawCliArgs {
  CliArgs args;
  std::string coordinator;
  bool wait = false;
  bool json = false;
  bool dry_run = false;
  bool submission = false;  // export
  std::string out;          // export
  bool regressions_only = false;
  std::string workload, config, name, state, limit, offset, user, queue, since,
      until, reason, timeout, window, baseline, tolerance, min_history, junit,
      markdown, json_file, request_id, for_duration, max_cv, nodes,
      ranks_per_node, precision, compression, scaling, series;
  std::vector<std::string> references, metrics;
};

// A command flag: its name (without dashes) and its field of RawCliArgs.
struct CommandFlag {
  const char* name;
  std::variant<bool RawCliArgs::*, std::string RawCliArgs::*,
               std::vector<std::string> RawCliArgs::*>
      field;
  bool required = false;  // by every command that takes it
};

// The command flag a row of the command table lists as `listed` (no
// dashes; "NAME?" marks it optional there), or null. NewCliFlagApp binds
// only the flags found here: the table must name no other.
const CommandFlag* FindCommandFlag(absl::string_view listed);

// An App over the whole command line, bound into `raw` (borrowed for the
// App's life): the global flags, and each command of CliCommands() with its
// positional arguments (into raw.args.positional) and the flags it lists;
// flags a command does not know fall through to the App. Required flags are
// not marked so in CLI11 (MissingRequiredFlag checks them after parsing), so
// that `drain --help` prints the usage instead of asking for --reason.
std::unique_ptr<CLI::App> NewCliFlagApp(RawCliArgs& raw);

// InvalidArgument naming the first flag `command` requires (a value flag
// required by every command that takes it, not marked optional by this
// one) that `raw` lacks.
absl::Status MissingRequiredFlag(const CliCommand& command,
                                 const RawCliArgs& raw);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_ARGS_COMMAND_FLAGS_H_
