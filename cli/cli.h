// The `hpcai500` command line: parses arguments, reads the spec and token
// files, connects, and runs one of the Commands. Everything it touches
// outside itself comes through CliEnvironment so tests can replace it.
//
// Thread-safe: free functions; RunCli uses only what `env` lends it.
#ifndef HPCAI500_CLI_CLI_H_
#define HPCAI500_CLI_CLI_H_

#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/check.h"
#include "cli/regress.h"
#include "common/tls_files.h"
#include "common/token.h"
#include "proto/hpcai500.grpc.pb.h"

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
  bool help = false;
  bool wait = false;     // submit
  bool json = false;     // show, leaderboard, regress, audit, history
  std::string workload;  // leaderboard, list
  std::string config;    // leaderboard, list
  std::string name;      // list, history
  v1::RunState state = v1::RUN_STATE_UNSPECIFIED;  // list, history; any
  // list, audit, history: 0 means 100; leaderboard: 0 means every row.
  int limit = 0;
  int offset = 0;        // leaderboard
  std::string user;      // history
  std::string queue;     // history
  int64_t since_ms = 0;  // history: --since as Unix ms; 0: unset
  int64_t until_ms = 0;  // history: --until as Unix ms; 0: unset
  std::string reason;    // invalidate
  RegressOptions regress;
  CheckOptions check;  // --timeout; json comes from `json`
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

// The usage text printed for --help and after a usage error.
std::string UsageText();

// What RunCli borrows from the process; every pointer must be set.
struct CliEnvironment {
  std::optional<std::string> coordinator_env;  // $HPCAI500_COORDINATOR
  std::optional<std::string> token_env;        // $HPCAI500_TOKEN
  std::istream* in = nullptr;                  // for `submit -`
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // Opens a stub to "HOST:PORT" with `credentials` (plaintext, or TLS after
  // --tls-ca); called at most once, after parsing.
  std::function<std::unique_ptr<v1::ClientService::StubInterface>(
      const std::string& address,
      const std::shared_ptr<grpc::ChannelCredentials>& credentials)>
      connect;
  absl::TimeZone time_zone = absl::LocalTimeZone();
};

// Runs `hpcai500 ARGS...` and returns its exit code (see commands.h):
// kExitUsage after printing the usage to err for a bad command line,
// kExitNoInput when the spec, token or --tls-ca file cannot be read.
int RunCli(const std::vector<std::string>& args, const CliEnvironment& env);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLI_H_
