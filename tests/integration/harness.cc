#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace hpcai500::testing {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// Starts `argv` in its own process group, stdout and stderr appended to
// `log_path`.
std::unique_ptr<Subprocess> StartLogged(const std::vector<std::string>& argv,
                                        const std::string& log_path) {
  SubprocessOptions options;
  options.argv = argv;
  options.stdout_path = options.stderr_path = log_path;
  options.append = true;
  options.own_process_group = true;
  return std::make_unique<Subprocess>(options);
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         std::chrono::seconds timeout) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return result;
  std::vector<char*> args = Argv(argv);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now())
                             .count());
    if (wait_ms <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, wait_ms) <= 0) continue;
    for (pollfd& fd : fds) {
      if (fd.fd < 0 || !(fd.revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t n = read(fd.fd, buf, sizeof buf);
      if (n <= 0) {
        close(fd.fd);
        fd.fd = -1;
        --open_fds;
        continue;
      }
      (&fd == &fds[0] ? result.out : result.err).append(buf, n);
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string BinaryPath(const std::string& name) {
  return std::string(HPCAI500_BINARY_DIR) + "/bin/" + name;
}

TestCluster::TestCluster() {
  char tmpl[] = "/tmp/hpcai500-it-XXXXXX";
  dir_ = mkdtemp(tmpl);
  // Two ports at once: two FreePort() calls may return the same one, and
  // hpcai500d then cannot listen for HTTP where gRPC already does.
  const std::vector<int> ports = FreePorts(2);
  grpc_port_ = ports.empty() ? -1 : ports[0];
  http_port_ = ports.empty() ? -1 : ports[1];
}

TestCluster::~TestCluster() {
  agents_.clear();
  coordinator_.reset();
  if (!keep_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  } else {
    std::fprintf(stderr, "integration files kept in %s\n", dir_.c_str());
  }
}

std::string TestCluster::grpc_address() const {
  return grpc_host_ + ":" + std::to_string(grpc_port_);
}

bool TestCluster::StartCoordinator(const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {BinaryPath("hpcai500d"),
                                   "--grpc",
                                   grpc_address(),
                                   "--http",
                                   "127.0.0.1:" + std::to_string(http_port_),
                                   "--db",
                                   db_path(),
                                   "--web-dir",
                                   std::string(HPCAI500_SOURCE_DIR) + "/web"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  coordinator_ = StartLogged(argv, dir_ + "/hpcai500d.log");
  return WaitFor([&] { return Cli({"list"}).exit_code == 0; },
                 std::chrono::seconds(20));
}

void TestCluster::StopCoordinator(int sig) {
  if (!coordinator_) return;
  coordinator_->Signal(sig);
  coordinator_->Wait(std::chrono::seconds(20));
  coordinator_.reset();
}

bool TestCluster::StartAgent(const std::string& name, int slots,
                             const std::vector<std::string>& extra_args) {
  LaunchAgent(name, slots, extra_args);
  return WaitFor(
      [&] {
        CommandResult nodes = Cli({"nodes"});
        return nodes.exit_code == 0 &&
               nodes.out.find(name) != std::string::npos;
      },
      std::chrono::seconds(20));
}

void TestCluster::LaunchAgent(const std::string& name, int slots,
                              const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = agent_prefixes_[name];
  const std::vector<std::string> agent = {BinaryPath("hpcai500-agent"),
                                          "--coordinator",
                                          grpc_address(),
                                          "--name",
                                          name,
                                          "--slots",
                                          std::to_string(slots),
                                          "--workdir",
                                          agent_workdir(name)};
  argv.insert(argv.end(), agent.begin(), agent.end());
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  agents_[name] = StartLogged(argv, agent_log(name));
}

void TestCluster::StopAgent(const std::string& name, int sig) {
  auto it = agents_.find(name);
  if (it == agents_.end()) return;
  it->second->Signal(sig);
  it->second->Wait(std::chrono::seconds(20));
  agents_.erase(it);
}

void TestCluster::SignalAgent(const std::string& name, int sig) {
  auto it = agents_.find(name);
  if (it != agents_.end()) it->second->Signal(sig);
}

CommandResult TestCluster::Cli(const std::vector<std::string>& args,
                               std::chrono::seconds timeout) {
  std::vector<std::string> argv = {BinaryPath("hpcai500"), "--coordinator",
                                   grpc_address()};
  argv.insert(argv.end(), cli_flags_.begin(), cli_flags_.end());
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, timeout);
}

CommandResult TestCluster::CliAs(const std::string& token,
                                 const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinaryPath("hpcai500"), "--coordinator",
                                   grpc_address(), "--token", token};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, std::chrono::seconds(60));
}

std::string TestCluster::CreateToken(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinaryPath("hpcai500d"), "token", "create",
                                   "--db", db_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult made = RunCommand(argv, std::chrono::seconds(30));
  if (made.exit_code != 0) {
    ADD_FAILURE() << "hpcai500d token create failed: " << made.err;
    return "";
  }
  return made.out.substr(0, made.out.find('\n'));
}

std::string TestCluster::WriteSpec(const std::string& name,
                                   const std::string& yaml) {
  std::string path = dir_ + "/" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

std::string TestCluster::HttpGet(const std::string& path, int* status) {
  *status = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(http_port_);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  std::string request = "GET " + path +
                        " HTTP/1.1\r\nHost: localhost\r\nConnection: "
                        "close\r\n\r\n";
  if (write(fd, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) response.append(buf, n);
  close(fd);
  if (response.rfind("HTTP/1.1 ", 0) != 0) return "";
  *status = std::atoi(response.c_str() + 9);
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

}  // namespace hpcai500::testing
