// A cluster of real hpcai500 processes on loopback for integration tests:
// hpcai500d, agents and CLI calls, each a child process of the test, with
// their logs in a temporary folder that is kept when a test fails.
//
// Not thread-safe: one test thread drives a TestCluster.
#ifndef HPCAI500_TESTS_INTEGRATION_HARNESS_H_
#define HPCAI500_TESTS_INTEGRATION_HARNESS_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/worker/test_util.h"  // ReadFile, FreePort, WaitFor, ...

namespace hpcai500::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by the timeout or a signal
  std::string out;
  std::string err;
};

// Runs argv (no shell) to completion, capturing stdout and stderr; kills it
// after `timeout`.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::seconds timeout);

// Binaries from this build.
std::string BinaryPath(const std::string& name);

class TestCluster {
 public:
  TestCluster();
  ~TestCluster();

  const std::string& dir() const { return dir_; }
  std::string grpc_address() const;
  int http_port() const { return http_port_; }
  std::string db_path() const { return dir_ + "/hpcai500.db"; }
  std::string agent_workdir(const std::string& name) const {
    return dir_ + "/agent-" + name;
  }
  std::string agent_log(const std::string& name) const {
    return dir_ + "/agent-" + name + ".log";
  }

  // Starts hpcai500d on fixed ports (the same across restarts), with
  // `extra_args` after the harness's own flags, and waits until it accepts
  // calls. Returns false if it did not come up.
  bool StartCoordinator(const std::vector<std::string>& extra_args = {});
  // Sends `sig` and waits for the coordinator to exit.
  void StopCoordinator(int sig);
  // Starts an agent (with extra_args after the harness's own flags) and
  // waits until `hpcai500 nodes` lists it connected.
  bool StartAgent(const std::string& name, int slots,
                  const std::vector<std::string>& extra_args = {});
  // Starts an agent as StartAgent does, without waiting for anything.
  void LaunchAgent(const std::string& name, int slots,
                   const std::vector<std::string>& extra_args = {});
  void StopAgent(const std::string& name, int sig);
  // Sends `sig` to agent `name` without waiting (SIGSTOP, SIGCONT).
  void SignalAgent(const std::string& name, int sig);

  // Runs the CLI against this cluster, with the flags of set_cli_flags
  // before `args`.
  CommandResult Cli(const std::vector<std::string>& args,
                    std::chrono::seconds timeout = std::chrono::seconds(60));
  // Flags every later Cli call (the harness's own included) passes, e.g.
  // {"--tls-ca", FILE}.
  void set_cli_flags(std::vector<std::string> flags) {
    cli_flags_ = std::move(flags);
  }
  // Runs the CLI with `--token token` instead of set_cli_flags's flags.
  CommandResult CliAs(const std::string& token,
                      const std::vector<std::string>& args);
  // `hpcai500d token create --db DB ARGS...` beside the coordinator; the
  // token it printed ("" and a test failure when it failed).
  std::string CreateToken(const std::vector<std::string>& args);
  // Writes a spec file and returns its path.
  std::string WriteSpec(const std::string& name, const std::string& yaml);
  // An HTTP GET on the coordinator's HTTP port; returns the body ("" on
  // failure) and sets *status to the HTTP status code.
  std::string HttpGet(const std::string& path, int* status);

  // The host hpcai500d's gRPC port binds to and every client (agents, CLI)
  // dials; 127.0.0.1 unless set before StartCoordinator.
  void set_grpc_host(std::string host) { grpc_host_ = std::move(host); }
  // Runs agent `name` behind `prefix` (e.g. {"/usr/sbin/ip", "netns",
  // "exec", NS}: a command that execs the rest); set before StartAgent.
  void set_agent_prefix(const std::string& name,
                        std::vector<std::string> prefix) {
    agent_prefixes_[name] = std::move(prefix);
  }

  // Keep the folder for inspection (called when a test failed).
  void KeepFiles() { keep_ = true; }

 private:
  std::string dir_;
  std::string grpc_host_ = "127.0.0.1";
  std::map<std::string, std::vector<std::string>> agent_prefixes_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  bool keep_ = false;
  std::vector<std::string> cli_flags_;
  std::unique_ptr<Subprocess> coordinator_;
  std::map<std::string, std::unique_ptr<Subprocess>> agents_;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_INTEGRATION_HARNESS_H_
