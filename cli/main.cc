// hpcai500: the command-line client of the coordinator (see cli/cli.h).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/token.h"
#include "grpc/support/log.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

int main(int argc, char** argv) {
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
  env.in = &std::cin;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.connect = [](const std::string& address,
                   const std::shared_ptr<grpc::ChannelCredentials>& credentials)
      -> std::unique_ptr<hpcai500::v1::ClientService::StubInterface> {
    return hpcai500::v1::ClientService::NewStub(
        grpc::CreateChannel(address, credentials));
  };
  return hpcai500::RunCli(std::vector<std::string>(argv + 1, argv + argc), env);
}
