// `hpcai500 changes [NAME] [--series S] [--since T] [--regressions-only]
// [--json]`: the change points hpcai500d keeps over every run series
// (ListChanges), newest first, each with its size, its interval and what
// changed in the runs' fingerprints across it.
//
// Thread-compatible: one command, one thread.
#ifndef HPCAI500_CLI_COMMANDS_CHANGES_H_
#define HPCAI500_CLI_COMMANDS_CHANGES_H_

#include "cli/client/command_context.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// Asks for the change points `request` filters and prints them (a table,
// or the response as JSON with `json`); returns the exit code.
int ListChangesCommand(const CommandContext& context,
                       const v1::ListChangesRequest& request, bool json);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_CHANGES_H_
