// CliArgs: the `hpcai500` command line after ParseCliArgs
// (cli/args/parse_cli_args.h), before any file is read: the global flags,
// the command (cli/args/command_table.h) with its arguments, and each flag's
// value checked and converted.
//
// Thread-compatible: a plain struct.
#ifndef HPCAI500_CLI_ARGS_CLI_ARGS_H_
#define HPCAI500_CLI_ARGS_CLI_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/commands/check.h"
#include "cli/commands/sweep.h"
#include "cli/regress/regress.h"
#include "common/tls_files.h"
#include "common/token.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

inline constexpr char kDefaultCoordinator[] = "127.0.0.1:7500";
inline constexpr char kCoordinatorEnvVar[] = "HPCAI500_COORDINATOR";

// The command line after parsing, before any file is read.
struct CliArgs {
  std::string coordinator;  // flag, else environment, else the default
  TokenFlags token;     // --token, --token-file; both empty: $HPCAI500_TOKEN
  TlsFileFlags tls;     // --tls-ca; empty: plaintext
  std::string command;  // empty with `help`
  std::vector<std::string> positional;
  int64_t run_id = 0;  // the RUN argument of a command that takes one
  bool help = false;
  bool wait = false;     // submit
  bool json = false;     // show, leaderboard, regress, audit, history, ...
  std::string workload;  // leaderboard, list
  std::string config;    // leaderboard, list
  std::string name;      // list, history
  v1::RunState state = v1::RUN_STATE_UNSPECIFIED;  // list, history; any
  // list, audit, history: 0 means 100; leaderboard: 0 means every row.
  int limit = 0;
  int offset = 0;        // leaderboard
  std::string user;      // history
  std::string queue;     // history
  int64_t since_ms = 0;  // history, changes: --since as Unix ms; 0: unset
  int64_t until_ms = 0;  // history: --until as Unix ms; 0: unset
  std::string series;    // changes: a series key
  bool regressions_only = false;  // changes
  std::string reason;             // invalidate, drain, maintenance start
  int64_t maintenance_ms = 0;     // maintenance start: --for
  // submit: --request-id; empty: a new one each invocation.
  std::string request_id;
  std::string out;          // export: --out
  bool submission = false;  // export: the ID is a submission's
  RegressOptions regress;
  SweepOptions sweep;  // sweep: its axes, --scaling, --dry-run
  CheckOptions check;  // --timeout, and json as `json`
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_ARGS_CLI_ARGS_H_
