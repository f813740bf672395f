// hpcai500: the command-line client of the coordinator (see cli/cli.h).
#include <cstdlib>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/client/coordinator_client.h"
#include "cli/text/printable_stream.h"
#include "common/token.h"
#include "common/version.h"
#include "grpc/support/log.h"

int main(int argc, char** argv) {
  if (hpcai500::PrintVersionIfAsked("hpcai500", argc, argv, std::cout)) {
    return 0;
  }
  // gRPC's own error lines (a failed TLS handshake) repeat, less clearly,
  // what the CLI's one line says; GRPC_VERBOSITY brings them back.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) {
    gpr_set_log_function([](gpr_log_func_args*) {});
  }
  hpcai500::CliEnvironment env;
  if (const char* coordinator = std::getenv(hpcai500::kCoordinatorEnvVar)) {
    env.coordinator_env = coordinator;
  }
  if (const char* token = std::getenv(hpcai500::kTokenEnvVar)) {
    env.token_env = token;
  }
  // Control characters from elsewhere are escaped on the way out.
  hpcai500::PrintableStreambuf out_buffer(std::cout.rdbuf());
  hpcai500::PrintableStreambuf err_buffer(std::cerr.rdbuf());
  std::ostream out(&out_buffer);
  std::ostream err(&err_buffer);
  env.in = &std::cin;
  env.out = &out;
  env.err = &err;
  env.connect = hpcai500::ConnectToCoordinator;
  const int code =
      hpcai500::RunCli(std::vector<std::string>(argv + 1, argv + argc), env);
  out.flush();
  err.flush();
  return code;
}
