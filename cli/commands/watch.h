// `hpcai500 submit` and `hpcai500 watch`: submits a spec or a suite and
// prints the new run ids, and follows runs to their end, printing their
// live log and then their result (cli/text/run_text.h). Exit codes in
// cli/client/exit_codes.h.
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_WATCH_H_
#define HPCAI500_CLI_COMMANDS_WATCH_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client/command_context.h"
#include "cli/client/coordinator_client.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class RunWatcher {
 public:
  // What `context` lends is borrowed for the life of the object.
  explicit RunWatcher(const CommandContext& context);

  // Submits `spec_yaml` (read from `spec_source`, named in messages) and
  // prints each new run id on its own line. With `wait`, then watches each
  // run in turn and returns the worst of their exit codes. Returns
  // kExitRefused and prints the server's message when the spec is refused.
  // Each watched run's last snapshot is appended to *runs (in submission
  // order, at least the id set) when `runs` is not null.
  // The submit is idempotent (CoordinatorClient::Submit) under
  // `request_id`, a new one when empty: retried while its answer may have
  // been lost, then kExitUnavailable naming the id to submit again with; a
  // replayed answer prints the first submit's run ids, noted on err.
  int Submit(const std::string& spec_source, const std::string& spec_yaml,
             bool wait, std::vector<v1::Run>* runs = nullptr,
             const std::string& request_id = "");
  // Prints the run's live log lines until it ends, then its result; the
  // exit code ExitCodeForRun gives it, or kExitFailed when the watch ends
  // first. *last (if not null) gets the last snapshot seen, at least with
  // the id set.
  int Watch(int64_t run_id, v1::Run* last = nullptr);

 private:
  // Prints why the submit of `spec_source` under `request_id` failed with
  // `status` (not OK) and returns the exit code: kExitRefused for a spec
  // refused, kExitUnavailable when every retry went unanswered, else as
  // CoordinatorClient::ReportError.
  int SubmitFailed(const std::string& spec_source,
                   const std::string& request_id, const grpc::Status& status);

  // Constant after construction.
  const CoordinatorClient& client_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_WATCH_H_
