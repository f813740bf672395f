// The CLI's subcommands over a ClientService stub: each sends its requests,
// prints to the given streams and returns the process exit code. Argument
// parsing lives in cli.h; tests drive these with an in-process server.
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_H_
#define HPCAI500_CLI_COMMANDS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "cli/check.h"
#include "cli/regress.h"
#include "grpcpp/client_context.h"
#include "proto/hpcai500.grpc.pb.h"

namespace hpcai500 {

// Exit codes of `hpcai500`. For submit --wait and watch, kExitOk means the
// run finished and reached its target quality.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBelowTarget = 1;
inline constexpr int kExitRegressed = 1;  // regress: a metric regressed
inline constexpr int kExitFailed = 2;     // failed, cancelled, or an error
inline constexpr int kExitRefused = 3;    // the spec was refused
inline constexpr int kExitUsage = 64;     // bad command line (sysexits)
inline constexpr int kExitNoInput = 66;   // a file could not be read

// The exit code a finished run stands for: 0 succeeded and reached its
// target, 1 succeeded below it, 2 otherwise (failed, cancelled, unscored).
int ExitCodeForRun(const v1::Run& run);

struct CommandOptions {
  std::string coordinator;  // "HOST:PORT", named in error messages
  std::string token;        // sent as "authorization: Bearer TOKEN" if set
  absl::TimeZone time_zone = absl::LocalTimeZone();
  absl::Duration rpc_timeout = absl::Seconds(30);  // not for watch
};

class Commands {
 public:
  // `stub`, `out` and `err` are borrowed for the life of the object.
  Commands(v1::ClientService::StubInterface* stub, CommandOptions options,
           std::ostream& out, std::ostream& err);

  // Submits `spec_yaml` (read from `spec_source`, named in messages) and
  // prints each new run id on its own line. With `wait`, then watches each
  // run in turn and returns the worst of their exit codes. Returns 3 and
  // prints the server's message when the spec is refused.
  int Submit(const std::string& spec_source, const std::string& spec_yaml,
             bool wait);
  // Prints the run's live log lines until it ends, then its result.
  int Watch(int64_t run_id);
  // The runs `filter` matches (name, workload, config, state), newest
  // first, filter.limit() of them (0: 100), as a table.
  int List(const v1::ListRunsRequest& filter);
  // A human summary (with each attempt's nodes' inventory), or the Run as
  // JSON with `json`.
  int Show(int64_t run_id, bool json);
  int Cancel(int64_t run_id);
  // Holds (`hold`) or releases a queued run.
  int Hold(int64_t run_id, bool hold);
  // The nodes as a table (state and its reason, slots, devices, driver,
  // labels), or the ListNodesResponse as JSON with `json`.
  int Nodes(bool json = false);
  // Drains node `name` with `reason`, or resumes it.
  int Drain(const std::string& name, const std::string& reason);
  int Resume(const std::string& name);
  // `hpcai500 check NODE` (cli/check.h): submits a noop run pinned to node
  // `name`, waits for it at most options.timeout (then cancels it), and
  // prints one line per phase with its time (or, with options.json, one JSON
  // object). Returns kExitOk when the run succeeded, kExitFailed when the
  // node is unknown, down, drained or draining, the run failed, was refused
  // or did not end in time (the output says which), and also when the node
  // list cannot be read (then only err says why, and no verdict is
  // printed). Defined in cli/check.cc.
  int Check(const std::string& name, const CheckOptions& options);
  // The queues with their nodes, runs and priorities.
  int Queues(bool json = false);
  // Takes run_id's result off the leaderboard with `reason`.
  int Invalidate(int64_t run_id, const std::string& reason);
  // The newest `limit` (<= 0: 100) audit rows, newest first, as a table or
  // JSON.
  int Audit(int limit, bool json);
  // The page `request` asks for as ranked tables (one per workload, with a
  // line naming the rows shown when the page is not all of them), or the
  // LeaderboardResponse as JSON with `json`.
  int Leaderboard(const v1::LeaderboardRequest& request, bool json);
  // Accounting rows (cli/history.h) of the runs `filter` matches, newest
  // first, filter.limit() of them (0: 100), as a table or one JSON array.
  int History(const v1::ListRunsRequest& filter, bool json);
  // Reads options.baseline_run if set, submits the spec or suite and waits
  // like Submit, then, per spec, reads the newest options.window good runs
  // of its series submitted before these (the band's history) and its
  // baseline (options.baseline; by default the promoted one, else the
  // series), and prints the comparison of each metric (as JSON with `json`;
  // the live output then goes to err) and writes options.junit_path,
  // markdown_path and json_path if set. Returns kExitOk (also with no
  // baseline yet), kExitRegressed, kExitRefused, or kExitFailed when a run
  // did not finish with a score, a baseline run has no score, or on any
  // error.
  int Regress(const std::string& spec_source, const std::string& spec_yaml,
              const RegressOptions& options, bool json);
  // Makes run_id the promoted regress baseline of its series.
  int PromoteBaseline(int64_t run_id);

 private:
  // A context carrying the token and, unless `streaming`, the deadline.
  void Prepare(grpc::ClientContext* context, bool streaming) const;
  // Calls a unary RPC of the stub with a prepared context.
  template <typename Request, typename Response>
  grpc::Status Unary(grpc::Status (v1::ClientService::StubInterface::*rpc)(
                         grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response) const;
  // GetRun for `run_id` into *run.
  grpc::Status GetRun(int64_t run_id, v1::Run* run) const;
  // Prints one line naming the coordinator; returns kExitFailed.
  int ReportRpcError(const char* what, const grpc::Status& status) const;
  void PrintResult(const v1::Run& run) const;
  // Submit and Watch, also handing out each watched run's last snapshot
  // (`runs` in submission order; `last` with at least the id set).
  int SubmitAndWatch(const std::string& spec_source,
                     const std::string& spec_yaml, bool wait,
                     std::vector<v1::Run>& runs);
  int WatchUntilEnd(int64_t run_id, v1::Run& last);
  // Lists what `filter` matches, newest first, in pages of at most 100 runs
  // (paging back with before_id), handing each run to `take` until `take`
  // returns false, filter.limit() runs were taken (0: no bound) or none is
  // left. Returns the first failed RPC's status.
  grpc::Status ListRunsPaged(v1::ListRunsRequest filter,
                             const std::function<bool(v1::Run)>& take) const;
  // The rows `request` asks for (request.limit(), 0: all, from
  // request.offset()) and the total, asked for in pages of at most 1,000
  // rows. Returns the first failed RPC's status.
  grpc::Status LeaderboardPaged(const v1::LeaderboardRequest& request,
                                v1::LeaderboardResponse* board) const;
  // Regress's baseline run, read before it submits; false after printing
  // why it cannot be one.
  bool ReadBaselineRun(int64_t run_id, std::vector<v1::Run>& baseline);
  // The promoted baseline run of `spec`'s series into `baseline` (left
  // empty when none was promoted). False after printing why not.
  bool ReadPromotedBaseline(const v1::RunSpec& spec,
                            std::vector<v1::Run>& baseline);
  // Regress's report for one submission's `runs`; nullopt after printing an
  // RPC error. `named_run`: the --baseline RUN, read already.
  std::optional<RegressReport> JudgeSubmission(
      const std::vector<v1::Run>& runs, const RegressOptions& options,
      const std::vector<v1::Run>& named_run);
  // The series baseline of `runs` (one submission): the newest `window`
  // succeeded, scored runs of the same series with lower ids, asked of the
  // coordinator by name, workload, config and state. False after printing
  // an RPC error.
  bool ReadRegressSeries(const std::vector<v1::Run>& runs, int window,
                         std::vector<v1::Run>& series);

  // Constant after construction.
  v1::ClientService::StubInterface* const stub_;
  const CommandOptions options_;
  std::ostream& out_;
  std::ostream& err_;
};

// Here rather than in commands.cc: Check (cli/check.cc) calls it too.
template <typename Request, typename Response>
grpc::Status Commands::Unary(
    grpc::Status (v1::ClientService::StubInterface::*rpc)(grpc::ClientContext*,
                                                          const Request&,
                                                          Response*),
    const Request& request, Response* response) const {
  grpc::ClientContext context;
  Prepare(&context, /*streaming=*/false);
  return (stub_->*rpc)(&context, request, response);
}

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_H_
