// The usage text of `hpcai500`, laid out from the command table
// (cli/args/command_table.h): each command's synopsis with its description
// from one column, the global flags, and the exit codes.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_ARGS_USAGE_H_
#define HPCAI500_CLI_ARGS_USAGE_H_

#include <string>

#include "cli/args/command_table.h"

namespace hpcai500 {

// The usage text printed for --help and after a usage error.
std::string UsageText();

// `hpcai500 COMMAND --help`: the global flags and `command`'s lines of
// UsageText (its row's, or the row before's where it shares them: release
// with hold). `command` must be a row of CliCommands().
std::string CommandUsageText(const CliCommand& command);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_ARGS_USAGE_H_
