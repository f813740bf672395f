// The CLI's commands that answer one request (or one paged list) with text:
// each makes its RPCs through a CoordinatorClient, hands the answer to a
// formatter (cli/text/run_text.h, cli/text/cluster_text.h,
// cli/text/leaderboard_text.h, cli/text/history.h) or prints it as JSON, and
// returns the process exit code (cli/client/exit_codes.h): kExitOk, or
// kExitFailed after the client reported a failed call. Submit and watch are in
// cli/commands/watch.h, regress in cli/regress/regress_command.h, check in
// cli/commands/check_command.h.
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_COMMANDS_H_
#define HPCAI500_CLI_COMMANDS_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "cli/client/command_context.h"
#include "cli/client/coordinator_client.h"
#include "cli/client/exit_codes.h"
#include "google/protobuf/message.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class Commands {
 public:
  // What `context` lends is borrowed for the life of the object.
  explicit Commands(const CommandContext& context);

  // The runs `filter` matches (name, workload, config, state), newest
  // first, filter.limit() of them (0: 100), as a table, or the
  // ListRunsResponse as JSON with `json`.
  int List(const v1::ListRunsRequest& filter, bool json);
  // A human summary (with each attempt's nodes' inventory), or the Run as
  // JSON with `json`.
  int Show(int64_t run_id, bool json);
  int Cancel(int64_t run_id);
  // Holds (`hold`) or releases a queued run.
  int Hold(int64_t run_id, bool hold);
  // The nodes as a table (state and its reason, slots, devices, driver,
  // labels), or the ListNodesResponse as JSON with `json`.
  int Nodes(bool json);
  // Drains node `name` with `reason`, or resumes it.
  int Drain(const std::string& name, const std::string& reason);
  int Resume(const std::string& name);
  // The maintenance window (FormatMaintenance; the ListNodesResponse's as
  // JSON with `json`); SetMaintenance starts one for `duration_ms` from now
  // with `reason`, or with 0 ends it, and prints it.
  int Maintenance(bool json);
  int SetMaintenance(int64_t duration_ms, const std::string& reason);
  // The queues with their nodes, runs and priorities.
  int Queues(bool json);
  // Takes run_id's result off the leaderboard with `reason`.
  int Invalidate(int64_t run_id, const std::string& reason);
  // The newest `limit` (<= 0: 100) audit rows, newest first, as a table or
  // JSON.
  int Audit(int limit, bool json);
  // The page `request` asks for as ranked tables (one per workload, with a
  // line naming the rows shown when the page is not all of them), or the
  // LeaderboardResponse as JSON with `json`.
  int Leaderboard(const v1::LeaderboardRequest& request, bool json);
  // Accounting rows (cli/text/history.h) of the runs `filter` matches, newest
  // first, filter.limit() of them (0: 100), as a table or one JSON array.
  int History(const v1::ListRunsRequest& filter, bool json);
  // Makes run_id the promoted regress baseline of its series.
  int PromoteBaseline(int64_t run_id);

 private:
  // Calls `rpc` with `request` and prints what `format` makes of the
  // answer, or with `json` the answer as JSON (FormatJson). kExitFailed
  // after the client reported a failed call, naming `what`, or as
  // PrintJson.
  template <typename Request, typename Response, typename Format>
  int Answer(absl::string_view what,
             grpc::Status (v1::ClientService::StubInterface::*rpc)(
                 grpc::ClientContext*, const Request&, Response*),
             const Request& request, bool json, Format format);
  // Prints `text` to out; returns kExitOk.
  int Print(const std::string& text);
  // Prints `message` as JSON (FormatJson); kExitFailed after printing why
  // to err when it cannot be encoded.
  int PrintJson(const google::protobuf::Message& message);

  // Constant after construction.
  const CoordinatorClient& client_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_COMMANDS_H_
