// `hpcai500 check NODE` over the coordinator: reads the node list, submits
// the noop run pinned to the node (cli/commands/check.h), watches it with a
// deadline, cancels it when it does not end in time, and prints the phases
// (CheckLines or CheckJson).
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_
#define HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "cli/client/command_context.h"
#include "cli/client/coordinator_client.h"
#include "cli/commands/check.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class CheckCommand {
 public:
  // context.client and context.out are borrowed for the life of the
  // object (the client reports the errors).
  explicit CheckCommand(const CommandContext& context);

  // Submits a noop run pinned to node `name`, waits for it at most
  // options.timeout (then cancels it), and prints one line per phase with
  // its time (or, with options.json, one JSON object). Returns kExitOk when
  // the run succeeded, kExitFailed when the node is unknown, down, drained
  // or draining, the run failed, was refused or did not end in time (the
  // output says which), and also when the node list cannot be read (then
  // only the client's error stream says why, and no verdict is printed).
  int Run(const std::string& name, const CheckOptions& options);

 private:
  // Submits the noop run pinned to `node` and notes its id and layout in
  // `report`; false with report.problem set when it was refused.
  bool SubmitNoop(const v1::Node& node, CheckReport& report);
  // Watches report.run_id until it ends or `timeout` from `start` passes,
  // and fills the phases, the state and the verdict into `report`; a run
  // that did not end is cancelled (CancelUnended), so that it does not run
  // later, unobserved.
  void WatchNoop(absl::Time start, absl::Duration timeout, CheckReport& report);
  // Cancels `run_id`; "; run N cancelled", or why cancelling failed, for
  // the report's problem.
  std::string CancelUnended(int64_t run_id);

  // Constant after construction.
  const CoordinatorClient& client_;
  std::ostream& out_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_CHECK_COMMAND_H_
