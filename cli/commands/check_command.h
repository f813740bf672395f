// `hpcai500 check NODE` over the coordinator: reads the node list, submits
// the noop run pinned to the node (cli/commands/check.h), watches it with a
// deadline, cancels it when it does not end in time, and prints the phases
// (CheckLines or CheckJson).
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_
#define HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_

#include <ostream>
#include <string>

#include "cli/client/coordinator_client.h"
#include "cli/commands/check.h"

namespace hpcai500 {

class CheckCommand {
 public:
  // `client` and `out` are borrowed for the life of the object.
  CheckCommand(const CoordinatorClient& client, std::ostream& out);

  // Submits a noop run pinned to node `name`, waits for it at most
  // options.timeout (then cancels it), and prints one line per phase with
  // its time (or, with options.json, one JSON object). Returns kExitOk when
  // the run succeeded, kExitFailed when the node is unknown, down, drained
  // or draining, the run failed, was refused or did not end in time (the
  // output says which), and also when the node list cannot be read (then
  // only the client's error stream says why, and no verdict is printed).
  int Run(const std::string& name, const CheckOptions& options);

 private:
  // Constant after construction.
  const CoordinatorClient& client_;
  std::ostream& out_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_
