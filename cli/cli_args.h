// The `hpcai500` command line parsed into CliArgs, before any file is read:
// the global flags, the command (cli/command_table.h: its arguments and the
// flags it takes), and each flag's value checked.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_CLI_ARGS_H_
#define HPCAI500_CLI_CLI_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/check.h"
#include "cli/regress.h"
#include "cli/sweep.h"
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
  int offset = 0;              // leaderboard
  std::string user;            // history
  std::string queue;           // history
  int64_t since_ms = 0;        // history: --since as Unix ms; 0: unset
  int64_t until_ms = 0;        // history: --until as Unix ms; 0: unset
  std::string reason;          // invalidate, drain, maintenance start
  int64_t maintenance_ms = 0;  // maintenance start: --for
  // submit: --request-id; empty: a new one each invocation.
  std::string request_id;
  RegressOptions regress;
  SweepOptions sweep;  // sweep: its axes, --scaling, --dry-run
  CheckOptions check;  // --timeout, and json as `json`
};

// Parses `args` (without the program name) by the rules of common/flags.h;
// relative --since/--until values count back from the current time.
// Global flags may appear before or after the command, a command's flags
// after it. InvalidArgument naming the problem for an unknown command or
// flag, a flag the command does not take, a missing, empty or bad value, a
// flag given twice that is not repeatable (--reference, --metric), both
// --token and --token-file, or a wrong argument count.
absl::StatusOr<CliArgs> ParseCliArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& coordinator_env);

// Whether `flag` (without dashes, with or without the command table's
// optional mark) is a command flag ParseCliArgs knows how to read; the
// command table names only such flags.
bool IsCommandFlag(absl::string_view flag);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLI_ARGS_H_
