// ParseCliArgs: the `hpcai500` command line into CliArgs
// (cli/args/cli_args.h) by the rules of common/flags.h, before any file is
// read: the global flags, the command with the arguments and flags its row
// of the command table (cli/args/command_table.h) lists, and each value
// checked and converted.
//
// Thread-safe: a free function.
#ifndef HPCAI500_CLI_ARGS_PARSE_CLI_ARGS_H_
#define HPCAI500_CLI_ARGS_PARSE_CLI_ARGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/args/cli_args.h"

namespace hpcai500 {

// Parses `args` (without the program name); relative --since/--until values
// count back from the current time, and without --coordinator the
// coordinator is `coordinator_env`, else kDefaultCoordinator. Global flags
// may appear before or after the command, a command's flags after it.
// InvalidArgument naming the problem for an unknown command or flag, a flag
// the command does not take, a missing, empty or bad value, a flag given
// twice that is not repeatable (--reference, --metric), both --token and
// --token-file, or a wrong argument count.
absl::StatusOr<CliArgs> ParseCliArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& coordinator_env);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_ARGS_PARSE_CLI_ARGS_H_
