// hpcai500-agent: the per-node agent. Parses flags and runs the Agent until
// SIGINT or SIGTERM; the workers it started keep running after it stops,
// unless it leaves (--leave-on-stop).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/options.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "common/printable.h"
#include "common/token.h"
#include "common/version.h"

namespace {

// The signal that stopped the agent; 0 while it runs.
std::atomic<int> stop_requested{0};

void RequestStop(int signal) { stop_requested.store(signal); }

}  // namespace

int main(int argc, char** argv) {
  if (hpcai500::PrintVersionIfAsked("hpcai500-agent", argc, argv, std::cout)) {
    return 0;
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::fputs(hpcai500::agent::kAgentUsage, stdout);
      return 0;
    }
  }
  std::optional<std::string> token_env;
  if (const char* token = std::getenv(hpcai500::kTokenEnvVar)) {
    token_env = token;
  }
  auto options = hpcai500::agent::ParseAgentArgs(args, token_env);
  if (!options.ok()) {
    // The message may echo a flag's value: printed escaped.
    std::fprintf(
        stderr, "hpcai500-agent: %s\n%s",
        hpcai500::EscapeLine(std::string(options.status().message())).c_str(),
        hpcai500::agent::kAgentUsage);
    return 2;
  }
  struct sigaction action = {};
  action.sa_handler = RequestStop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  hpcai500::agent::PosixProcessLauncher processes;
  hpcai500::RealClock clock;
  hpcai500::agent::Agent agent(*std::move(options), &processes, &clock);
  absl::Status status = agent.Run(&stop_requested);
  if (!status.ok()) {
    std::fprintf(stderr, "hpcai500-agent: %s\n",
                 hpcai500::EscapeLine(std::string(status.message())).c_str());
    return 1;
  }
  return 0;
}
