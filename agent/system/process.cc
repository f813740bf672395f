// Real processes: fork and exec into their own group, reaped, signalled,
// found by an argument, told apart by their start time.
#include "agent/system/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hpcai500::agent {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Opens a file for the child's stdout/stderr (close-on-exec in the agent;
// dup2 in the child clears the flag on the copy).
absl::StatusOr<int> OpenForAppend(const std::string& path) {
  int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open ", path, ": ", ErrnoText(errno)));
  }
  return fd;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings)
    out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The files a child's stdin (/dev/null), stdout and stderr become, opened
// before fork.
struct ChildFiles {
  int in = -1;
  int out = -1;
  int err = -1;

  void Close() const {
    for (int fd : {in, out, err}) {
      if (fd >= 0) ::close(fd);
    }
  }
};

absl::StatusOr<ChildFiles> OpenChildFiles(const LaunchSpec& spec) {
  ChildFiles files;
  files.in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (files.in < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open /dev/null: ", ErrnoText(errno)));
  }
  absl::StatusOr<int> out = OpenForAppend(spec.stdout_path);
  if (!out.ok()) {
    files.Close();
    return out.status();
  }
  files.out = *out;
  absl::StatusOr<int> err = OpenForAppend(spec.stderr_path);
  if (!err.ok()) {
    files.Close();
    return err.status();
  }
  files.err = *err;
  return files;
}

// The child after fork: async-signal-safe calls only. Leads a new session
// with `files` as its stdio in `cwd` (null: the agent's) and execs; when
// that fails, writes errno to `error_fd` and exits 127.
[[noreturn]] void ExecChild(const ChildFiles& files, const char* cwd,
                            char* const argv[], char* const envp[],
                            int error_fd) {
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  int err = 0;
  if (::setsid() < 0 || ::dup2(files.in, 0) < 0 || ::dup2(files.out, 1) < 0 ||
      ::dup2(files.err, 2) < 0 || (cwd != nullptr && ::chdir(cwd) != 0)) {
    err = errno;
  } else {
    ::execve(argv[0], argv, envp);
    err = errno;
  }
  ssize_t ignored = ::write(error_fd, &err, sizeof(err));
  (void)ignored;
  ::_exit(127);
}

// The parent's wait for the child's exec: the pipe closes on a successful
// exec; otherwise it carries the child's errno, and the child is reaped.
absl::Status AwaitExec(pid_t pid, int error_fd, const std::string& program) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_fd, &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  ::close(error_fd);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    ::waitpid(pid, nullptr, 0);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start ", program, ": ", ErrnoText(child_errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<pid_t> PosixProcessLauncher::Launch(const LaunchSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("launch: empty argv");
  }
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls are allowed (the agent has other threads).
  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  absl::StatusOr<ChildFiles> files = OpenChildFiles(spec);
  if (!files.ok()) return files.status();
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    files->Close();
    return absl::InternalError(absl::StrCat("pipe: ", ErrnoText(err)));
  }
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild(*files, cwd, argv.data(), envp.data(), error_pipe[1]);
  }
  int fork_errno = errno;
  ::close(error_pipe[1]);
  files->Close();
  if (pid < 0) {
    ::close(error_pipe[0]);
    return absl::InternalError(absl::StrCat("fork: ", ErrnoText(fork_errno)));
  }
  if (absl::Status execed = AwaitExec(pid, error_pipe[0], spec.argv[0]);
      !execed.ok()) {
    return execed;
  }
  return pid;
}

std::optional<ExitStatus> PosixProcessLauncher::TryWait(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  ExitStatus exit;
  if (r < 0) return exit;  // not our child (any more): unknown outcome
  if (WIFEXITED(status)) {
    exit.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  }
  return exit;
}

void PosixProcessLauncher::SignalGroup(pid_t pgid, int sig) {
  if (pgid > 1) ::kill(-pgid, sig);
}

void PosixProcessLauncher::SignalProcess(pid_t pid, int sig) {
  if (pid > 1) ::kill(pid, sig);
}

std::map<std::string, pid_t> PosixProcessLauncher::FindByArguments(
    const std::set<std::string>& arguments) {
  std::map<std::string, pid_t> found;
  if (arguments.empty()) return found;
  std::error_code ec;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid <= 1) continue;
    std::ifstream in(absl::StrCat("/proc/", name, "/cmdline"),
                     std::ios::binary);
    if (!in) continue;
    std::string word;
    bool first = true;
    while (std::getline(in, word, '\0')) {
      if (!first && arguments.count(word) > 0) found.emplace(word, pid);
      first = false;
    }
    if (found.size() == arguments.size()) break;
  }
  return found;
}

absl::StatusOr<uint64_t> PosixProcessLauncher::StartTime(pid_t pid) {
  if (pid <= 0) return absl::InvalidArgumentError("pid must be positive");
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  if (!in) return absl::NotFoundError(absl::StrCat("no process ", pid));
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcStatStartTime(text.str());
}

absl::StatusOr<uint64_t> ParseProcStatStartTime(const std::string& stat) {
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so
  // fields are counted after the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) {
    return absl::InvalidArgumentError("/proc stat: no ')' after the name");
  }
  std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); field 22 is fields[19].
  if (fields.size() < 20) {
    return absl::InvalidArgumentError("/proc stat: fewer than 22 fields");
  }
  if (fields[0] == "Z" || fields[0] == "X") {
    return absl::NotFoundError("process has exited");
  }
  uint64_t start = 0;
  if (!absl::SimpleAtoi(fields[19], &start)) {
    return absl::InvalidArgumentError("/proc stat: field 22 is not a number");
  }
  return start;
}

}  // namespace hpcai500::agent
