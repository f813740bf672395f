// CommandContext: what a command of the CLI works with while it runs: the
// coordinator it asks (cli/client/coordinator_client.h), and the streams its
// output and its error lines go to.
//
// Thread-compatible: it only borrows; the client and both streams must
// outlive every command given the context.
#ifndef HPCAI500_CLI_CLIENT_COMMAND_CONTEXT_H_
#define HPCAI500_CLI_CLIENT_COMMAND_CONTEXT_H_

#include <ostream>

#include "cli/client/coordinator_client.h"

namespace hpcai500 {

struct CommandContext {
  const CoordinatorClient& client;
  std::ostream& out;  // what the command prints
  std::ostream& err;  // why it failed, and progress beside JSON output
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLIENT_COMMAND_CONTEXT_H_
