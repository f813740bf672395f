// The worker's versions asked of `hpcai500-worker --version` and put into
// the inventory.
#include "agent/node/worker_version.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agent/system/files.h"
#include "common/inventory.h"

namespace hpcai500::agent {
namespace {

constexpr absl::Duration kPollInterval = absl::Milliseconds(10);
// --version prints four short lines; anything longer is not ours.
constexpr size_t kMaxVersionBytes = 4096;

// PATH and LD_LIBRARY_PATH of this process: what loading the worker needs.
std::vector<std::string> LoaderEnvironment() {
  std::vector<std::string> env;
  for (const char* name : {"PATH", "LD_LIBRARY_PATH"}) {
    if (const char* value = std::getenv(name)) {
      env.push_back(absl::StrCat(name, "=", value));
    }
  }
  return env;
}

// A new empty file for the worker's output: "" when none could be made.
std::string TemporaryOutputPath() {
  const char* dir = std::getenv("TMPDIR");
  std::string path = absl::StrCat(dir != nullptr && *dir != '\0' ? dir : "/tmp",
                                  "/hpcai500-worker-version-XXXXXX");
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return "";
  ::close(fd);
  return path;
}

// Waits for `pid` until `deadline`; nullopt (after killing its group and
// reaping it) when it is still running then.
std::optional<ExitStatus> WaitUntil(ProcessLauncher& launcher, pid_t pid,
                                    absl::Time deadline) {
  while (true) {
    if (std::optional<ExitStatus> exit = launcher.TryWait(pid)) return exit;
    if (absl::Now() >= deadline) break;
    absl::SleepFor(kPollInterval);
  }
  launcher.SignalGroup(pid, SIGKILL);
  while (!launcher.TryWait(pid).has_value()) absl::SleepFor(kPollInterval);
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> AskWorkerVersion(
    const std::string& worker_path, absl::Duration timeout,
    ProcessLauncher& launcher) {
  const std::string output = TemporaryOutputPath();
  if (output.empty()) {
    return absl::FailedPreconditionError(
        "no temporary file for the worker's --version output");
  }
  LaunchSpec spec;
  spec.argv = {worker_path, "--version"};
  spec.env = LoaderEnvironment();
  spec.stdout_path = output;
  spec.stderr_path = "/dev/null";
  absl::StatusOr<pid_t> pid = launcher.Launch(spec);
  if (!pid.ok()) {
    ::unlink(output.c_str());
    return absl::FailedPreconditionError(pid.status().message());
  }
  const std::optional<ExitStatus> exit =
      WaitUntil(launcher, *pid, absl::Now() + timeout);
  const std::string text = ReadFileHead(output, kMaxVersionBytes);
  ::unlink(output.c_str());
  if (!exit.has_value()) {
    return absl::DeadlineExceededError(
        absl::StrCat(worker_path, " --version did not answer within ",
                     absl::FormatDuration(timeout)));
  }
  if (exit->exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        worker_path, " --version ",
        exit->signal != 0 ? absl::StrCat("was killed by signal ", exit->signal)
                          : absl::StrCat("exited ", exit->exit_code)));
  }
  std::map<std::string, std::string> lines = ParseWorkerVersionLines(text);
  if (lines.count("worker") == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(worker_path,
                     " --version printed no worker= line (not an "
                     "hpcai500-worker?)"));
  }
  return lines;
}

std::map<std::string, std::string> ParseWorkerVersionLines(
    absl::string_view text) {
  std::map<std::string, std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view key =
        absl::StripAsciiWhitespace(line.substr(0, eq));
    if (key.empty()) continue;
    lines[std::string(key)] =
        std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  return lines;
}

void AddWorkerVersions(const std::map<std::string, std::string>& lines,
                       v1::Inventory* inventory) {
  auto& versions = *inventory->mutable_versions();
  if (auto worker = lines.find("worker"); worker != lines.end()) {
    versions["worker"] = worker->second;
  }
  if (auto torch = lines.find("libtorch"); torch != lines.end()) {
    auto cuda = lines.find("cuda");
    auto nccl = lines.find("nccl");
    std::string build = "CPU";
    if (cuda != lines.end() && cuda->second == "yes") {
      build = nccl != lines.end() && nccl->second != "no"
                  ? absl::StrCat("CUDA, NCCL ", nccl->second)
                  : "CUDA";
    }
    versions["libtorch"] = absl::StrCat(torch->second, " (", build, ")");
  }
  FitInventory(inventory);
}

}  // namespace hpcai500::agent
