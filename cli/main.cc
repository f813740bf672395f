// hpcai500: the command-line client of the coordinator (see cli/cli.h).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "common/token.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

int main(int argc, char** argv) {
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
  env.connect = [](const std::string& address)
      -> std::unique_ptr<hpcai500::v1::ClientService::StubInterface> {
    return hpcai500::v1::ClientService::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  };
  return hpcai500::RunCli(std::vector<std::string>(argv + 1, argv + argc), env);
}
