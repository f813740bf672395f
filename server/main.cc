// hpcai500d: the coordinator. Parses its flags (server/options.h), starts
// the Daemon (server/daemon.h: the store, the coordinator, access control
// and the servers), and serves until SIGTERM (unless --ignore-sigterm) or
// SIGINT. `hpcai500d token`, `hpcai500d site-key` and `hpcai500d backup` are
// commands of their own.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/printable.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "server/auth/site_key_command.h"
#include "server/auth/token_command.h"
#include "server/daemon.h"
#include "server/options.h"
#include "server/store/backup_command.h"

namespace hpcai500 {
namespace {

// Blocks the stop signals in this thread and every thread it starts after,
// so that only sigwait() takes them; returns them.
sigset_t BlockStopSignals(bool ignore_sigterm) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  if (ignore_sigterm) {
    signal(SIGTERM, SIG_IGN);
  } else {
    sigaddset(&stop_signals, SIGTERM);
  }
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

absl::Status RunServer(const ServerOptions& flags) {
  SetLogIdentity("hpcai500d", /*context=*/"");
  const sigset_t stop_signals = BlockStopSignals(flags.ignore_sigterm);
  ASSIGN_OR_RETURN(std::unique_ptr<Daemon> daemon, Daemon::Start(flags));
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  LogInfo(absl::StrCat("signal ", signal_number, ": shutting down"));
  daemon->Stop();
  LogInfo("stopped");
  return absl::OkStatus();
}

}  // namespace
}  // namespace hpcai500

int main(int argc, char** argv) {
  if (hpcai500::PrintVersionIfAsked("hpcai500d", argc, argv, std::cout)) {
    return 0;
  }
  // Debian's abseil checks every lock for deadlock cycles (a few per cent
  // of hpcai500d's CPU at 1,000 agents); the tests, not production, look
  // for them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "backup") {
    return hpcai500::RunBackupCommand({args.begin() + 1, args.end()}, std::cout,
                                      std::cerr);
  }
  if (!args.empty() && args[0] == "token") {
    hpcai500::RealClock clock;
    return hpcai500::RunTokenCommand({args.begin() + 1, args.end()}, clock,
                                     std::cout, std::cerr);
  }
  if (!args.empty() && args[0] == "site-key") {
    return hpcai500::RunSiteKeyCommand({args.begin() + 1, args.end()},
                                       std::cout, std::cerr);
  }
  absl::StatusOr<hpcai500::ServerOptions> flags =
      hpcai500::ParseServerOptions(args);
  if (!flags.ok()) {
    // The message may echo a flag's value: printed escaped.
    std::cerr << "hpcai500d: "
              << hpcai500::EscapeLine(std::string(flags.status().message()))
              << "\n"
              << hpcai500::kServerUsage;
    return 2;
  }
  if (flags->help) {
    std::cout << hpcai500::kServerUsage;
    return 0;
  }
  absl::Status status = hpcai500::RunServer(*flags);
  if (!status.ok()) {
    std::cerr << "hpcai500d: "
              << hpcai500::EscapeLine(std::string(status.message())) << "\n";
    return 1;
  }
  return 0;
}
