// The `hpcai500` command line: parses arguments (cli/args/parse_cli_args.h),
// reads the spec, token, TLS and baseline files, connects, and runs the
// command's handler from the command table (cli/args/command_table.h).
// Everything it touches outside itself comes through CliEnvironment so tests
// can replace it.
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

#include "absl/time/time.h"
#include "cli/args/cli_args.h"
#include "cli/client/exit_codes.h"
#include "cli/client/retry.h"
#include "proto/hpcai500.grpc.pb.h"

namespace hpcai500 {

// What RunCli borrows from the process; every pointer must be set.
struct CliEnvironment {
  std::optional<std::string> coordinator_env;  // $HPCAI500_COORDINATOR
  std::optional<std::string> token_env;        // $HPCAI500_TOKEN
  std::istream* in = nullptr;                  // for `submit -`
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // Opens a stub to "HOST:PORT" with `credentials` (plaintext, or TLS after
  // --tls-ca); called after parsing, once and again for each retry of a
  // submit.
  std::function<std::unique_ptr<v1::ClientService::StubInterface>(
      const std::string& address,
      const std::shared_ptr<grpc::ChannelCredentials>& credentials)>
      connect;
  absl::TimeZone time_zone = absl::LocalTimeZone();
  RetryPolicy retry;  // for a submit whose answer may have been lost
};

// Runs `hpcai500 ARGS...` and returns its exit code (cli/client/exit_codes.h):
// kExitUsage after printing the usage to err for a bad command line,
// kExitNoInput when the spec, token, --tls-ca or --baseline file cannot be
// read.
int RunCli(const std::vector<std::string>& args, const CliEnvironment& env);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLI_H_
