// A cluster of real hpcai500 processes on loopback for integration tests:
// hpcai500d, agents and CLI calls, each a child process of the test, with
// their logs in a temporary folder that is kept when a test fails.
//
// Not thread-safe: one test thread drives a TestCluster.
#ifndef HPCAI500_TESTS_INTEGRATION_HARNESS_H_
#define HPCAI500_TESTS_INTEGRATION_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

// A child process in its own process group, stdout and stderr appended to
// `log_path`. The destructor kills it (SIGKILL) and reaps it.
class ChildProcess {
 public:
  static std::unique_ptr<ChildProcess> Start(
      const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits for exit; returns the exit code, 128+signal, or -1 on timeout.
  int Wait(std::chrono::milliseconds timeout);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool reaped_ = false;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

// Polls `done` every 100 ms until it returns true or `timeout` passes.
bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds timeout);

std::string ReadFile(const std::string& path);

// True when a process with this pid exists and is not a zombie.
bool ProcessAlive(pid_t pid);

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

  // Starts hpcai500d on fixed ports (the same across restarts) and waits
  // until it accepts calls. Returns false if it did not come up.
  bool StartCoordinator();
  // Sends `sig` and waits for the coordinator to exit.
  void StopCoordinator(int sig);
  // Starts an agent and waits until `hpcai500 nodes` lists it connected.
  bool StartAgent(const std::string& name, int slots);
  void StopAgent(const std::string& name, int sig);

  // Runs the CLI against this cluster.
  CommandResult Cli(const std::vector<std::string>& args,
                    std::chrono::seconds timeout = std::chrono::seconds(60));
  // Writes a spec file and returns its path.
  std::string WriteSpec(const std::string& name, const std::string& yaml);
  // An HTTP GET on the coordinator's HTTP port; returns the body ("" on
  // failure) and sets *status to the HTTP status code.
  std::string HttpGet(const std::string& path, int* status);

  // Keep the folder for inspection (called when a test failed).
  void KeepFiles() { keep_ = true; }

 private:
  std::string dir_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  bool keep_ = false;
  std::unique_ptr<ChildProcess> coordinator_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_INTEGRATION_HARNESS_H_
