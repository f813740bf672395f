// What the tests share beyond GoogleTest: a scratch folder, a file read whole,
// a worker's events file parsed, the message of a thrown exception, a free
// loopback port, polling, a child process with its output in files, and a
// worker run as one rank alone.
// Header-only, standard C++, POSIX and header-only nlohmann/json, so the
// worker's tests build with HPCAI500_WORKER_ONLY; the
// integration harness (tests/integration/harness.h) and the agent's tests use
// it too.
//
// Not thread-safe: each object belongs to one test thread.
#ifndef HPCAI500_TESTS_WORKER_TEST_UTIL_H_
#define HPCAI500_TESTS_WORKER_TEST_UTIL_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace hpcai500::testing {

#ifdef HPCAI500_BINARY_DIR
// The worker binary of this build, which the tests run as a child.
inline constexpr char kWorker[] = HPCAI500_BINARY_DIR "/bin/hpcai500-worker";
#endif

// A fresh folder `<gtest TempDir>/<name>_<pid>` (emptied if it existed),
// removed with the object unless Keep() was called.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::string(::testing::TempDir()) + "/" + name + "_" +
              std::to_string(::getpid())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  // "<prefix>_<current test's name>", for a fixture's per-test folder.
  static ScratchDir ForCurrentTest(const std::string& prefix) {
    return ScratchDir(
        prefix + "_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  ScratchDir(ScratchDir&& other) noexcept
      : path_(std::move(other.path_)), keep_(other.keep_) {
    other.keep_ = true;  // the moved-from object owns nothing
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    if (keep_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  const std::string& path() const { return path_; }
  // Leaves the folder for inspection (a test that failed).
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

// The whole file ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The ":::MLLOG {...}" lines of a worker's events file, parsed, in order;
// other lines are skipped ([] when the file cannot be read). Throws
// nlohmann::json::parse_error for a malformed event.
inline std::vector<nlohmann::json> ReadEvents(const std::string& path) {
  constexpr std::string_view kPrefix = ":::MLLOG ";
  std::vector<nlohmann::json> events;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    events.push_back(nlohmann::json::parse(line.substr(kPrefix.size())));
  }
  return events;
}

// The events of `events` whose "key" is `key`, in order.
inline std::vector<nlohmann::json> WithKey(
    const std::vector<nlohmann::json>& events, const std::string& key) {
  std::vector<nlohmann::json> found;
  for (const nlohmann::json& e : events) {
    if (e.value("key", "") == key) found.push_back(e);
  }
  return found;
}

// The message of what `f` throws, "" when it returns.
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// `count` different TCP ports on 127.0.0.1 that were free a moment ago (each
// held until all are found: two FreePort() calls in a row may both return
// the port the kernel just took back); empty when they could not be found.
inline std::vector<int> FreePorts(int count) {
  std::vector<int> fds, ports;
  for (int i = 0; i < count; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (static_cast<int>(ports.size()) != count) ports.clear();
  return ports;
}

// A TCP port on 127.0.0.1 that was free a moment ago; -1 when none was found.
inline int FreePort() {
  const std::vector<int> ports = FreePorts(1);
  return ports.empty() ? -1 : ports[0];
}

// Polls `done` every `every` until it returns true or `timeout` passes;
// returns its last answer.
inline bool WaitFor(
    const std::function<bool()>& done, std::chrono::milliseconds timeout,
    std::chrono::milliseconds every = std::chrono::milliseconds(100)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

// True when a process with this pid exists and is not a zombie.
inline bool ProcessAlive(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] != 'Z';
}

// How a Subprocess starts.
struct SubprocessOptions {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  // The whole environment; unset: the test's own.
  std::optional<std::vector<std::string>> env;
  std::string stdout_path;  // may equal stderr_path: one file for both
  std::string stderr_path;
  bool append = false;             // else the files are truncated
  bool own_process_group = false;  // setpgid(0, 0) in the child
};

// A child process (stdin /dev/null, no shell). The destructor kills it with
// SIGKILL and reaps it if it is still running.
class Subprocess {
 public:
  explicit Subprocess(const SubprocessOptions& options) {
    std::vector<std::string> argv_s = options.argv;
    std::vector<std::string> env_s =
        options.env.value_or(std::vector<std::string>());
    const int flags =
        O_WRONLY | O_CREAT | (options.append ? O_APPEND : O_TRUNC);
    pid_ = ::fork();
    if (pid_ != 0) return;
    if (options.own_process_group) ::setpgid(0, 0);
    const int out = ::open(options.stdout_path.c_str(), flags, 0644);
    const int err = options.stderr_path == options.stdout_path
                        ? out
                        : ::open(options.stderr_path.c_str(), flags, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv, envp;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (options.env) {
      ::execve(argv[0], argv.data(), envp.data());
    } else {
      ::execv(argv[0], argv.data());
    }
    ::_exit(127);
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess() { Kill(); }

  pid_t pid() const { return pid_; }
  // Sends `sig` unless the process was already reaped.
  void Signal(int sig) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
  }
  // SIGKILL and reap, unless already reaped.
  void Kill() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      reaped_ = true;
    }
  }
  // The exit code, 128 + the signal that ended it, or -1 when it is still
  // running after `timeout` (it is left running).
  int Wait(std::chrono::steady_clock::duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0 && !reaped_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// This process's environment without RANK and WORLD_SIZE, so that a worker
// started with it is one rank alone.
inline std::vector<std::string> SingleRankEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("RANK=", 0) == 0 || var.rfind("WORLD_SIZE=", 0) == 0) {
      continue;
    }
    env.push_back(var);
  }
  return env;
}

// `env` ("NAME=value" entries) with each entry of `set` in place of the
// entries of the same name (getenv would find the first of two).
inline std::vector<std::string> WithVariables(
    const std::vector<std::string>& env, const std::vector<std::string>& set) {
  auto name = [](const std::string& entry) {
    return entry.substr(0, entry.find('='));
  };
  std::vector<std::string> out;
  for (const std::string& entry : env) {
    const bool replaced = std::any_of(
        set.begin(), set.end(),
        [&](const std::string& s) { return name(s) == name(entry); });
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), set.begin(), set.end());
  return out;
}

// Runs `worker` (an hpcai500-worker path) as rank 0 of 1 with `args` and
// "--threads 2", its output in `dir`/stdout and `dir`/stderr, with the
// variables of `variables` ("NAME=value") set. Returns the exit code, or -1
// when it was still running after `limit` (it is killed).
inline int RunWorkerAlone(
    const std::string& worker, const std::vector<std::string>& args,
    const std::string& dir,
    std::chrono::steady_clock::duration limit = std::chrono::minutes(4),
    const std::vector<std::string>& variables = {}) {
  SubprocessOptions o;
  o.argv = {worker};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.argv.insert(o.argv.end(), {"--threads", "2"});
  o.env = WithVariables(SingleRankEnvironment(), variables);
  o.stdout_path = dir + "/stdout";
  o.stderr_path = dir + "/stderr";
  Subprocess process(o);
  return process.Wait(limit);
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_WORKER_TEST_UTIL_H_
